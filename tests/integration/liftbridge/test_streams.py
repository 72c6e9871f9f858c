"""CreateStream, DeleteStream, PauseStream and SetStreamReadonly against a real node: the
stream they leave is the one REST describes, and every refusal names what it refuses."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import grpc
import httpx
import pytest

from spark_log.liftbridge import api_pb2 as pb
from spark_log.liftbridge import api_pb2_grpc
from tests.integration.conftest import fetch
from tests.support.waiting import wait_for

Stub = api_pb2_grpc.APIStub


async def refused(call: Awaitable[Any]) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await call
    return raised.value


def create_request(name: str, **fields: Any) -> pb.CreateStreamRequest:
    """A request with ``subject`` ``<name>.in``; Nullable* fields given by their value."""
    plain = {"subject", "group", "replicationFactor", "partitions"}
    request = pb.CreateStreamRequest(
        name=name, **{"subject": f"{name}.in", **{k: v for k, v in fields.items() if k in plain}}
    )
    for field, value in fields.items():
        if field not in plain:
            getattr(request, field).value = value
    return request


def describe(api: httpx.Client, name: str) -> dict[str, Any]:
    resp = api.get(f"/v1/streams/{name}")
    assert resp.status_code == 200, resp.text
    described: dict[str, Any] = resp.json()
    return described


async def test_create_maps_every_field_onto_the_spec(
    lb: Stub, api: httpx.Client, stream_name: str
) -> None:
    await lb.CreateStream(
        create_request(
            stream_name,
            replicationFactor=1,
            partitions=3,
            retentionMaxBytes=1_000_000,
            retentionMaxMessages=500,
            retentionMaxAge=3_600_000,
            compactEnabled=True,
            autoPauseTime=600_000,
            autoPauseDisableIfSubscribers=True,
            minIsr=1,
            optimisticConcurrencyControl=True,
            encryption=False,
        )
    )
    spec = describe(api, stream_name)["spec"]
    assert (spec["subject"], spec["partitions"], spec["replication_factor"]) == (
        f"{stream_name}.in",
        3,
        1,
    )
    assert (spec["retention_bytes"], spec["retention_messages"], spec["retention_ms"]) == (
        1_000_000,
        500,
        3_600_000,
    )
    assert spec["compaction"] and spec["optimistic_concurrency_control"]
    assert spec["auto_pause_ms"] == 600_000 and spec["auto_pause_disable_if_subscribers"]
    assert spec["min_isr"] == 1 and not spec["encryption"] and not spec["load_balance"]


async def test_zero_and_minus_one_mean_what_they_mean_to_liftbridge(
    lb: Stub, api: httpx.Client, stream_name: str
) -> None:
    """The single node is every live broker; zeros are defaults, gufo's compactEnabled=false
    and a zero segmentMaxBytes are accepted."""
    await lb.CreateStream(
        create_request(
            stream_name,
            replicationFactor=-1,
            partitions=0,
            retentionMaxAge=0,
            compactEnabled=False,
            segmentMaxBytes=0,
        )
    )
    spec = describe(api, stream_name)["spec"]
    assert (spec["replication_factor"], spec["partitions"], spec["retention_ms"]) == (1, 1, None)


async def test_a_group_is_the_streams_load_balanced_queue_group(
    lb: Stub, api: httpx.Client, stream_name: str
) -> None:
    await lb.CreateStream(create_request(stream_name, group=f"liftlog.{stream_name}"))
    assert describe(api, stream_name)["load_balance"] is True
    other = await refused(lb.CreateStream(create_request(f"{stream_name}-2", group="workers")))
    assert other.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "group 'workers' cannot be honoured" in (other.details() or "")
    assert api.get(f"/v1/streams/{stream_name}-2").status_code == 404


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"cleanerInterval": 60_000}, "cleanerInterval"),
        ({"segmentMaxBytes": 1 << 20}, "segmentMaxBytes"),
        ({"segmentMaxAge": 60_000}, "segmentMaxAge"),
        ({"compactMaxGoroutines": 4}, "compactMaxGoroutines"),
        ({"subject": "bad subject"}, "subject"),
        ({"subject": ""}, "subject"),
        ({"replicationFactor": -3}, "replicationFactor"),
        ({"replicationFactor": 2}, "replicationFactor: replication factor 2 larger than"),
        ({"partitions": -1}, "partitions"),
        ({"retentionMaxAge": -5}, "retentionMaxAge"),
        ({"minIsr": 2}, "minIsr must be between 1 and replicationFactor"),
    ],
)
async def test_what_cannot_be_honoured_is_refused_by_name(
    lb: Stub, api: httpx.Client, stream_name: str, fields: dict[str, Any], named: str
) -> None:
    error = await refused(lb.CreateStream(create_request(stream_name, **fields)))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert named in (error.details() or "")
    assert api.get(f"/v1/streams/{stream_name}").status_code == 404


@pytest.mark.parametrize("name", ["", "__cursors", "__activity"])
async def test_empty_and_reserved_names_are_invalid(lb: Stub, name: str) -> None:
    error = await refused(lb.CreateStream(pb.CreateStreamRequest(name=name, subject="x.y")))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_a_stream_that_exists_already_exists(lb: Stub, stream_name: str) -> None:
    """Even created again identically, as Liftbridge answers (REST's create answers 200)."""
    await lb.CreateStream(create_request(stream_name))
    identical = await refused(lb.CreateStream(create_request(stream_name)))
    different = await refused(lb.CreateStream(create_request(stream_name, partitions=2)))
    assert identical.code() == different.code() == grpc.StatusCode.ALREADY_EXISTS


async def test_delete_and_not_found(lb: Stub, api: httpx.Client, stream_name: str) -> None:
    await lb.CreateStream(create_request(stream_name))
    await lb.DeleteStream(pb.DeleteStreamRequest(name=stream_name))
    assert api.get(f"/v1/streams/{stream_name}").status_code == 404
    again = await refused(lb.DeleteStream(pb.DeleteStreamRequest(name=stream_name)))
    assert again.code() == grpc.StatusCode.NOT_FOUND
    internal = await refused(lb.DeleteStream(pb.DeleteStreamRequest(name="__cursors")))
    assert internal.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_pause_lasts_until_each_partitions_next_publish(
    lb: Stub, api: httpx.Client, stream_name: str
) -> None:
    await lb.CreateStream(create_request(stream_name, partitions=2))
    await lb.PauseStream(pb.PauseStreamRequest(name=stream_name, partitions=[1]))
    assert describe(api, stream_name)["idle_paused_partitions"] == [1]
    await lb.PauseStream(pb.PauseStreamRequest(name=stream_name, resumeAll=True))
    assert describe(api, stream_name)["idle_paused_partitions"] == [0, 1]
    metadata = await lb.FetchMetadata(pb.FetchMetadataRequest(streams=[stream_name]))
    assert all(p.paused for p in metadata.streamMetadata[0].partitions.values())

    published = api.post(
        f"/v1/streams/{stream_name}/partitions/1/records?encoding=utf-8",
        json={"records": [{"value": "a"}]},
    )
    assert published.status_code == 200, published.text
    assert fetch(api, stream_name, 1)["records"][0]["value"] == "a"
    wait_for(
        lambda: describe(api, stream_name)["idle_paused_partitions"] == [0],
        message="partition 1 to resume at its publish, partition 0 to stay paused",
    )


async def test_pause_refusals(lb: Stub, stream_name: str) -> None:
    await lb.CreateStream(create_request(stream_name, partitions=2))
    no_partition = await refused(
        lb.PauseStream(pb.PauseStreamRequest(name=stream_name, partitions=[0, 2]))
    )
    assert no_partition.code() == grpc.StatusCode.NOT_FOUND
    assert "no partition 2" in (no_partition.details() or "")
    no_stream = await refused(lb.PauseStream(pb.PauseStreamRequest(name=f"{stream_name}-x")))
    assert no_stream.code() == grpc.StatusCode.NOT_FOUND
    internal = await refused(lb.PauseStream(pb.PauseStreamRequest(name="__cursors")))
    assert internal.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_readonly_is_set_on_the_whole_stream(
    lb: Stub, api: httpx.Client, stream_name: str
) -> None:
    await lb.CreateStream(create_request(stream_name, partitions=2))
    some = await refused(
        lb.SetStreamReadonly(
            pb.SetStreamReadonlyRequest(name=stream_name, partitions=[0], readonly=True)
        )
    )
    assert some.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "partitions [0]" in (some.details() or "")
    assert describe(api, stream_name)["read_only"] is False

    every = pb.SetStreamReadonlyRequest(name=stream_name, partitions=[1, 0], readonly=True)
    await lb.SetStreamReadonly(every)
    assert describe(api, stream_name)["read_only"] is True
    refused_publish = api.post(
        f"/v1/streams/{stream_name}/partitions/0/records?encoding=utf-8",
        json={"records": [{"value": "a"}]},
    )
    assert refused_publish.json()["error"]["code"] == "stream_readonly"
    await lb.SetStreamReadonly(pb.SetStreamReadonlyRequest(name=stream_name, readonly=False))
    assert describe(api, stream_name)["read_only"] is False

    unknown = await refused(
        lb.SetStreamReadonly(pb.SetStreamReadonlyRequest(name=f"{stream_name}-x", readonly=True))
    )
    assert unknown.code() == grpc.StatusCode.NOT_FOUND
