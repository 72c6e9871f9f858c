"""Subscribe on two real nodes: a follower in the ISR serves ``readISRReplica`` and refuses
without it, a subscription ends with FAILED_PRECONDITION when its leader moves away, and a
read below the local log start is served from the lake, on into the log."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest

from liftlog.embedded.node import NodeProcess
from spark_log.api_models import ClusterInfo
from spark_log.config import LakeConfig, LogConfig
from spark_log.liftbridge import api_pb2 as pb
from spark_log.liftbridge.api_pb2_grpc import APIStub
from tests.integration.conftest import create_stream, node_client
from tests.integration.liftbridge.test_subscribe import handshake, read, read_to_end
from tests.support.liftbridge_client import liftbridge_stub
from tests.support.waiting import wait_for_async

SMALL_LOG = LogConfig(segment_bytes=16 * 1024, retention_check_interval_ms=100)
NEVER_S = 3600.0
HUGE_BYTES = 1 << 40
LAKE_COUNT = 1500
LAKE_BATCH = 500
"""Each batch fills a segment of its own (SMALL_LOG): retention keeps only the last one."""
RETAINED = 400
MOVE_TIMEOUT_S = 30.0


@pytest.fixture(scope="module")
def cluster(make_module_node: Any, tmp_path_factory: pytest.TempPathFactory) -> list[NodeProcess]:
    """Two nodes whose lake is written only by a flush (retention then drops the log)."""
    lake = LakeConfig(
        uri=str(Path(tmp_path_factory.mktemp("lake"))),
        export_interval_s=NEVER_S,
        export_min_bytes=HUGE_BYTES,
    )
    return [make_module_node(i, log=SMALL_LOG, lake=lake) for i in (1, 2)]


@pytest.fixture
async def stubs(cluster: list[NodeProcess]) -> AsyncIterator[dict[int, APIStub]]:
    """A Liftbridge stub of each node, by broker id."""
    async with AsyncExitStack() as stack:
        yield {
            n.config.broker_id: await stack.enter_async_context(
                liftbridge_stub(n.config.advertised_liftbridge_address)
            )
            for n in cluster
        }


@pytest.fixture
def api(cluster: list[NodeProcess]) -> Any:
    with node_client(cluster[0].api_url, timeout=60) as client:
        yield client


def partition_of(api: httpx.Client, stream: str) -> dict[str, Any]:
    described = api.get(f"/v1/streams/{stream}")
    assert described.status_code == 200, described.text
    partition: dict[str, Any] = described.json()["partitions"][0]
    return partition


def publish_values(api: httpx.Client, stream: str, values: list[str]) -> None:
    """Publish at the partition's leader."""
    leader = partition_of(api, stream)["leader"]
    with node_client(api_urls(api)[leader]) as client:
        resp = client.post(
            f"/v1/streams/{stream}/partitions/0/records",
            json={"records": [{"value": v} for v in values]},
            params={"encoding": "utf-8"},
        )
    assert resp.status_code == 200, resp.text


def api_urls(api: httpx.Client) -> dict[int, str]:
    return ClusterInfo.from_json(api.get("/v1/cluster").json()).api_urls()


def lake_value(offset: int) -> str:
    """Big enough that a batch of LAKE_BATCH fills a segment."""
    return f"v{offset}-" + "x" * 60


def replica_hw(node: NodeProcess, stream: str) -> int | None:
    with node_client(node.api_url) as client:
        view: dict[str, Any] = client.get(f"/v1/streams/{stream}/partitions/0").json()
    hw: int | None = view.get("high_watermark")
    return hw


async def replicated_stream(
    api: httpx.Client, cluster: list[NodeProcess], stream: str, count: int
) -> tuple[int, int]:
    """An RF 2 stream with ``count`` records that both replicas have committed; (leader,
    follower)."""
    create_stream(api, stream, replication_factor=2)
    await wait_for_async(
        lambda: len(partition_of(api, stream)["isr"]) == 2, message="both replicas in the ISR"
    )
    publish_values(api, stream, [f"v{i}" for i in range(count)])
    leader = partition_of(api, stream)["leader"]
    follower = next(n for n in cluster if n.config.broker_id != leader)
    await wait_for_async(
        lambda: replica_hw(follower, stream) == count, message="the follower's HW to catch up"
    )
    return leader, follower.config.broker_id


async def test_an_isr_follower_serves_read_isr_replica_and_refuses_without_it(
    api, cluster, stubs, stream_name
):
    _leader, follower = await replicated_stream(api, cluster, stream_name, 3)
    to_latest = pb.SubscribeRequest(
        stream=stream_name,
        startPosition=pb.EARLIEST,
        stopPosition=pb.STOP_LATEST,
        readISRReplica=True,
    )
    messages, code = await read_to_end(stubs[follower].Subscribe(to_latest))
    assert [m.value for m in messages[1:]] == [b"v0", b"v1", b"v2"]
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED

    following = stubs[follower].Subscribe(
        pb.SubscribeRequest(stream=stream_name, startPosition=pb.NEW_ONLY, readISRReplica=True)
    )
    await handshake(following)
    publish_values(api, stream_name, ["v3"])
    assert [(m.offset, m.value) for m in await read(following, 1)] == [(3, b"v3")]
    following.cancel()

    leader_only = pb.SubscribeRequest(stream=stream_name, startPosition=pb.EARLIEST)
    refused, code = await read_to_end(stubs[follower].Subscribe(leader_only))
    assert (refused, code) == ([], grpc.StatusCode.FAILED_PRECONDITION)
    member = pb.SubscribeRequest(
        stream=stream_name,
        readISRReplica=True,
        consumer=pb.Consumer(groupId="g", consumerId="c"),
    )
    refused, code = await read_to_end(stubs[follower].Subscribe(member))
    assert (refused, code) == ([], grpc.StatusCode.INVALID_ARGUMENT)


async def test_a_subscription_ends_with_failed_precondition_when_its_leader_moves(
    api, cluster, stubs, stream_name
):
    leader, follower = await replicated_stream(api, cluster, stream_name, 2)
    call = stubs[leader].Subscribe(
        pb.SubscribeRequest(stream=stream_name, startPosition=pb.EARLIEST)
    )
    await handshake(call)
    assert [m.offset for m in await read(call, 2)] == [0, 1]

    plan = {"partitions": [{"partition": 0, "replicas": [follower, leader]}]}
    moved = api.post(f"/v1/streams/{stream_name}/reassign", json=plan)
    assert moved.status_code == 200, moved.text
    await wait_for_async(
        lambda: partition_of(api, stream_name)["replicas"] == [follower, leader],
        MOVE_TIMEOUT_S,
        message="the new replica order",
    )
    elected = api.post(f"/v1/streams/{stream_name}/elect-preferred")
    assert elected.status_code == 200, elected.text
    await wait_for_async(
        lambda: partition_of(api, stream_name)["leader"] == follower,
        MOVE_TIMEOUT_S,
        message="leadership to move",
    )
    messages, code = await asyncio.wait_for(read_to_end(call), MOVE_TIMEOUT_S)
    assert (messages, code) == ([], grpc.StatusCode.FAILED_PRECONDITION)


async def test_a_read_below_the_log_start_is_served_from_the_lake(api, cluster, stubs, stream_name):
    created = create_stream(api, stream_name, retention_messages=RETAINED)
    for first in range(0, LAKE_COUNT, LAKE_BATCH):
        publish_values(api, stream_name, [lake_value(o) for o in range(first, first + LAKE_BATCH)])
    flushed = api.post(f"/v1/streams/{stream_name}/flush")
    assert flushed.status_code == 200, flushed.text
    log_start = await wait_for_async(
        lambda: (
            (start := partition_of(api, stream_name)["log_start_offset"]) >= LAKE_COUNT - LAKE_BATCH
            and start
        ),
        30,
        message="retention to delete exported segments",
    )
    leader = stubs[created["partitions"][0]["leader"]]
    earliest = pb.SubscribeRequest(
        stream=stream_name, startPosition=pb.EARLIEST, stopPosition=pb.STOP_LATEST
    )
    messages, code = await read_to_end(leader.Subscribe(earliest))
    assert [(m.offset, m.value) for m in messages[1:]] == [
        (o, lake_value(o).encode()) for o in range(LAKE_COUNT)
    ]
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    from_offset = pb.SubscribeRequest(
        stream=stream_name,
        startPosition=pb.OFFSET,
        startOffset=log_start - 5,
        stopPosition=pb.STOP_OFFSET,
        stopOffset=log_start + 4,
    )
    messages, code = await read_to_end(leader.Subscribe(from_offset))
    assert [m.offset for m in messages[1:]] == list(range(log_start - 5, log_start + 5))
    assert all(m.timestamp > 0 and m.subject == f"{stream_name}.in" for m in messages[1:])
