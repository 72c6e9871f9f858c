"""Stream lifecycle on real nodes: read-only streams and live alters, set through one node and
applied by every node through ZooKeeper.

Probes that must not store anything while a change propagates carry a wrong
``Liftlog-Expected-Offset``: before the change the leader refuses them with
``expected_offset_mismatch``, after it with the new refusal, and never stores them.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import nats
import pyarrow as pa
import pytest

from datasource.compaction.target import scheduled_streams
from spark_log.client import Client
from spark_log.client.rest import RestClient
from spark_log.config import IngestConfig, LakeConfig, LogConfig
from spark_log.errors import StreamReadOnlyError
from spark_log.limits_config import LimitsConfig
from tests.integration.conftest import create_stream, fetch, node_client
from tests.support.encryption_cluster import encrypted_node_overrides, new_master_key
from tests.support.waiting import wait_for

PROPAGATION_TIMEOUT_S = 15.0
POLL_INTERVAL_S = 0.05
NO_SUCH_OFFSET = "999999"
LIFTLOG = str(Path(sys.executable).parent / "liftlog")


async def _request(
    nc: nats.NATS, subject: str, data: bytes, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    msg = await nc.request(subject, data, timeout=10, headers=headers)
    answer: dict[str, Any] = json.loads(msg.data)
    return answer


async def _poll(probe: Callable[[], Awaitable[Any]], message: str) -> Any:
    """Await ``probe`` until it returns something truthy (within the propagation timeout)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PROPAGATION_TIMEOUT_S
    while True:
        value = await probe()
        if value:
            return value
        if loop.time() >= deadline:
            raise AssertionError(f"timed out waiting for {message} (last value: {value!r})")
        await asyncio.sleep(POLL_INTERVAL_S)


def _arrow_batch(values: list[bytes]) -> bytes:
    table = pa.table({"value": pa.array(values, pa.binary())})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _two_partitions_on_two_nodes(make_node, stream_name: str, **spec: Any) -> tuple[Any, Any, int]:
    """Two nodes and a stream with one partition led by each: (node A, node B, the
    partition B leads). Changes go through A; B must apply them from ZooKeeper."""
    nodes = [make_node(i) for i in (1, 2)]
    with node_client(nodes[0].api_url) as api:
        created = create_stream(api, stream_name, partitions=2, **spec)
    leaders = {p["partition"]: p["leader"] for p in created["partitions"]}
    assert sorted(leaders.values()) == [1, 2], leaders
    node_b = nodes[1]
    partition_b = next(p for p, leader in leaders.items() if leader == node_b.broker_id)
    return nodes[0], node_b, partition_b


def _partition_subject(stream_name: str, partition: int) -> str:
    base = f"{stream_name}.in"
    return base if partition == 0 else f"{base}.{partition}"


async def test_read_only_set_on_one_node_is_applied_by_the_leader_on_another(
    make_node, nc, stream_name
):
    node_a, node_b, p = _two_partitions_on_two_nodes(make_node, stream_name)
    subject = _partition_subject(stream_name, p)
    assert (await _request(nc, subject, b"before"))["offset"] == 0
    with node_client(node_a.api_url) as api_a:
        described = api_a.post(f"/v1/streams/{stream_name}/readonly").json()
    assert described["read_only"] is True

    async def refused_as_read_only() -> bool:
        probe = await _request(nc, subject, b"probe", {"Liftlog-Expected-Offset": "9"})
        return probe["error"]["code"] == "stream_readonly"

    await _poll(refused_as_read_only, f"broker {node_b.broker_id} applying read-only")

    expected = {
        "stream": stream_name,
        "partition": p,
        "error": {"code": "stream_readonly", "message": f"stream {stream_name} is read-only"},
    }
    assert await _request(nc, subject, b"single") == expected
    batch = _arrow_batch([b"b1", b"b2"])
    assert await _request(nc, subject, batch, {"Liftlog-Batch": "arrow"}) == expected
    with node_client(node_b.api_url) as api_b:
        url = f"/v1/streams/{stream_name}/partitions/{p}/records"
        rest = api_b.post(url, json={"records": [{"value": "x"}]}, params={"encoding": "utf-8"})
        assert rest.status_code == 409 and rest.json()["error"]["code"] == "stream_readonly"
        async with Client(node_b.api_url) as client:
            with pytest.raises(StreamReadOnlyError, match="read-only"):
                await client.publish(stream_name, "via client", partition=p)
        # reads go on: fetches, describe and list
        assert [r["value"] for r in fetch(api_b, stream_name, p)["records"]] == ["before"]
        assert api_b.get(f"/v1/streams/{stream_name}").json()["read_only"] is True
        listed = api_b.get("/v1/streams").json()["streams"]
        assert next(s for s in listed if s["name"] == stream_name)["read_only"] is True

        assert api_b.post(f"/v1/streams/{stream_name}/readwrite").json()["read_only"] is False

    async def stored_again() -> bool:
        answer = await _request(nc, subject, b"after")
        return "offset" in answer

    await _poll(stored_again, "publishes accepted again")
    with node_client(node_b.api_url) as api_b:
        values = [r["value"] for r in fetch(api_b, stream_name, p)["records"]]
    assert values == ["before", "after"]  # nothing published while read-only was stored


async def test_alter_applies_on_every_node_without_a_restart(make_node, nc, stream_name):
    node_a, node_b, p = _two_partitions_on_two_nodes(make_node, stream_name)
    subject = _partition_subject(stream_name, p)
    with node_client(node_a.api_url) as api_a:
        altered = api_a.patch(
            f"/v1/streams/{stream_name}",
            json={"max_record_bytes": 100, "ack_policy": "leader", "retention_ms": 3_600_000},
        )
        assert altered.status_code == 200, altered.text
        body = altered.json()
        assert (body["max_record_bytes"], body["ack_policy"], body["retention_ms"]) == (
            100,
            "leader",
            3_600_000,
        )
        assert body["spec"]["max_record_bytes"] == 100

    async def too_large_refused() -> bool:
        probe = await _request(nc, subject, b"x" * 200, {"Liftlog-Expected-Offset": NO_SUCH_OFFSET})
        return probe["error"]["code"] == "record_too_large"

    await _poll(too_large_refused, f"broker {node_b.broker_id} applying max_record_bytes")
    assert (await _request(nc, subject, b"x" * 100))["offset"] == 0
    with node_client(node_b.api_url) as api_b:
        url = f"/v1/streams/{stream_name}/partitions/{p}/records"
        big = api_b.post(
            url, json={"records": [{"value": "y" * 200}]}, params={"encoding": "utf-8"}
        )
        assert big.status_code == 413 and big.json()["error"]["code"] == "record_too_large"
        described = api_b.get(f"/v1/streams/{stream_name}").json()
        assert (described["ack_policy"], described["max_record_bytes"]) == ("leader", 100)
        # null clears a limit again
        cleared = api_b.patch(f"/v1/streams/{stream_name}", json={"retention_ms": None})
        assert cleared.json()["retention_ms"] is None
    assert fetch_count(node_b, stream_name, p) == 1


def fetch_count(node: Any, stream_name: str, partition: int) -> int:
    with node_client(node.api_url) as api:
        return len(fetch(api, stream_name, partition)["records"])


def test_altered_retention_deletes_old_segments(make_node, stream_name):
    """A stream created without limits gets ``retention_messages`` later: the running
    node starts deleting old sealed segments (no lake: its limits alone decide)."""
    node = make_node(
        log=LogConfig(segment_bytes=2048, retention_check_interval_ms=100),
        lake=LakeConfig(enabled=False),
    )
    with node_client(node.api_url) as api:
        create_stream(api, stream_name)
        url = f"/v1/streams/{stream_name}/partitions/0/records"
        for i in range(40):
            body = {"records": [{"value": f"r{i}-{j}" + "x" * 40} for j in range(5)]}
            assert api.post(url, json=body, params={"encoding": "utf-8"}).status_code == 200

        def log_start() -> int:
            start: int = api.get(f"/v1/streams/{stream_name}").json()["partitions"][0][
                "log_start_offset"
            ]
            return start

        assert log_start() == 0
        resp = api.patch(f"/v1/streams/{stream_name}", json={"retention_messages": 50})
        assert resp.status_code == 200, resp.text
        wait_for(lambda: log_start() > 0, 15, message="retention after the alter")
        assert 200 - log_start() >= 50


def test_min_isr_alter_is_validated_and_applied(make_node, stream_name):
    nodes = [make_node(i) for i in (1, 2)]
    with node_client(nodes[0].api_url) as api:
        create_stream(api, stream_name, replication_factor=2, min_isr=1)
        too_big = api.patch(f"/v1/streams/{stream_name}", json={"min_isr": 3})
        assert too_big.status_code == 422
        assert "min_isr" in too_big.json()["error"]["message"]
        assert api.patch(f"/v1/streams/{stream_name}", json={"min_isr": 2}).json()["min_isr"] == 2
        restored = api.patch(f"/v1/streams/{stream_name}", json={"min_isr": None}).json()
        assert restored["min_isr"] is None  # back to the default: a majority


def test_compaction_settings_alter_and_reach_the_compaction_watcher(make_node, stream_name):
    """Compaction switched on with an interval through one node: every node describes it, and
    ``liftlog compact --watch`` (its ``scheduled_streams``) picks the stream up; switching it
    off takes it out again."""
    nodes = [make_node(i) for i in (1, 2)]
    with node_client(nodes[0].api_url) as api:
        create_stream(api, stream_name)
        on = {"compaction": True, "compaction_interval_s": 60, "delete_retention_ms": 5000}
        resp = api.patch(f"/v1/streams/{stream_name}", json=on)
        assert resp.status_code == 200, resp.text
    watcher = RestClient(nodes[1].api_url)
    with node_client(nodes[1].api_url) as api_b:
        described = api_b.get(f"/v1/streams/{stream_name}").json()
        assert {k: described[k] for k in on} == on
        assert stream_name in scheduled_streams(watcher)
        off = api_b.patch(
            f"/v1/streams/{stream_name}", json={"compaction": False, "compaction_interval_s": None}
        )
        assert off.status_code == 200, off.text
        assert off.json()["compaction"] is False
    assert stream_name not in scheduled_streams(watcher)


@pytest.mark.parametrize(
    ("changes", "status", "code", "words"),
    [
        ({"subject": "elsewhere"}, 409, "immutable_field", '"subject" cannot be altered'),
        ({"replication_factor": 2}, 409, "immutable_field", "reassign"),
        ({"partitions": 0}, 422, "invalid_request", "partitions"),
        ({"encryption": True}, 409, "immutable_field", '"encryption"'),
        ({"name": "other"}, 409, "immutable_field", "renamed"),
        ({"retention_ms": 0}, 422, "invalid_request", "retention_ms"),
        ({"ack_policy": "sometimes"}, 422, "invalid_request", "ack_policy"),
        ({"compaction_interval_s": 10}, 422, "invalid_request", "compaction"),
        ({"no_such_field": 1}, 422, "invalid_request", "no_such_field"),
    ],
)
def test_alter_refuses_immutable_fields_and_invalid_values(
    api: httpx.Client, stream_name, changes, status, code, words
):
    create_stream(api, stream_name)
    resp = api.patch(f"/v1/streams/{stream_name}", json=changes)
    assert resp.status_code == status, resp.text
    error = resp.json()["error"]
    assert error["code"] == code and words in error["message"], error
    # unchanged, and an immutable field with its current value is no change
    same = api.patch(f"/v1/streams/{stream_name}", json={"subject": f"{stream_name}.in"})
    assert same.status_code == 200 and same.json()["retention_ms"] is None


def test_alter_of_a_missing_stream_is_404(api: httpx.Client, stream_name):
    resp = api.patch(f"/v1/streams/{stream_name}", json={"retention_ms": 1000})
    assert resp.status_code == 404 and resp.json()["error"]["code"] == "stream_not_found"


def _cli(*args: str, server: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LIFTLOG, *args, "--server", server],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_cli_alter_readonly_and_readwrite_as_documented(node, api: httpx.Client, stream_name):
    create_stream(api, stream_name)
    server = node.api_url
    done = _cli(
        "stream",
        "alter",
        stream_name,
        "--retention-ms",
        "60000",
        "--ack-policy",
        "leader",
        server=server,
    )
    assert done.returncode == 0, done.stderr
    assert f"stream {stream_name} altered" in done.stdout
    described = api.get(f"/v1/streams/{stream_name}").json()
    assert (described["retention_ms"], described["ack_policy"]) == (60000, "leader")
    cleared = _cli("stream", "alter", stream_name, "--retention-ms", "none", server=server)
    assert cleared.returncode == 0, cleared.stderr
    assert api.get(f"/v1/streams/{stream_name}").json()["retention_ms"] is None
    refused = _cli("stream", "alter", stream_name, "--min-isr", "2", server=server)
    assert refused.returncode == 1 and "--min-isr" in refused.stderr + refused.stdout

    assert _cli("stream", "readonly", stream_name, server=server).returncode == 0
    shown = _cli("stream", "describe", stream_name, server=server)
    assert "read-only" in shown.stdout.splitlines()[0]
    grpc_line = f"brokers (Liftbridge gRPC): 1={node.config.advertised_liftbridge_address}"
    assert grpc_line in shown.stdout.splitlines()
    published = _cli("publish", stream_name, "refused", server=server)
    assert published.returncode == 1 and "stream_readonly" in published.stdout + published.stderr
    assert _cli("stream", "readwrite", stream_name, server=server).returncode == 0
    assert api.get(f"/v1/streams/{stream_name}").json()["read_only"] is False
    assert fetch(api, stream_name)["records"] == []


# ----------------------------------------------------------------------------- timestamps

HOUR_MS = 3_600_000


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


async def test_create_time_streams_store_the_producers_timestamp(api, nc, stream_name):
    created = create_stream(api, stream_name, timestamp_type="create")
    assert created["timestamp_type"] == "create"
    subject = f"{stream_name}.in"
    early = _now_ms() - 10 * 60 * 1000
    first = await _request(nc, subject, b"early", {"Liftlog-Timestamp": str(early)})
    assert first["offset"] == 0
    too_old = str(_now_ms() - 2 * HOUR_MS)
    refused = await _request(nc, subject, b"too old", {"Liftlog-Timestamp": too_old})
    assert refused["error"]["code"] == "invalid_timestamp", refused
    assert "max_timestamp_skew_ms" in refused["error"]["message"]
    future = str(_now_ms() + 2 * HOUR_MS)
    batch = _arrow_batch([b"f1", b"f2"])
    refused_batch = await _request(
        nc, subject, batch, {"Liftlog-Batch": "arrow", "Liftlog-Timestamp": future}
    )
    assert refused_batch["error"]["code"] == "invalid_timestamp"
    malformed = await _request(nc, subject, b"bad", {"Liftlog-Timestamp": "yesterday"})
    assert malformed["error"]["code"] == "invalid_timestamp"
    before_plain = _now_ms()
    assert (await _request(nc, subject, b"plain"))["offset"] == 1
    url = f"/v1/streams/{stream_name}/partitions/0/records"
    rest_time = early + 1000
    body = {"records": [{"value": "rest", "headers": {"Liftlog-Timestamp": str(rest_time)}}]}
    assert api.post(url, json=body, params={"encoding": "utf-8"}).json()["offsets"] == [2]
    bad = {"records": [{"value": "x", "headers": {"Liftlog-Timestamp": too_old}}]}
    rest_refused = api.post(url, json=bad, params={"encoding": "utf-8"})
    assert rest_refused.status_code == 422
    assert rest_refused.json()["error"]["code"] == "invalid_timestamp"

    records = fetch(api, stream_name)["records"]
    assert [r["value"] for r in records] == ["early", "plain", "rest"]  # refusals stored nothing
    assert records[0]["timestamp"] == early and records[2]["timestamp"] == rest_time
    assert records[1]["timestamp"] >= before_plain  # no header: the append time
    # timestamp search follows create times (Kafka's: the first record at or after)
    found = fetch(api, stream_name, timestamp=early + 1)["records"]
    assert found[0]["value"] == "plain"


async def test_log_append_streams_ignore_the_producers_timestamp(api, nc, stream_name):
    create_stream(api, stream_name)
    old = _now_ms() - 2 * HOUR_MS
    before = _now_ms()
    ack = await _request(nc, f"{stream_name}.in", b"v", {"Liftlog-Timestamp": str(old)})
    assert ack["offset"] == 0
    assert fetch(api, stream_name)["records"][0]["timestamp"] >= before


async def test_timestamp_type_can_be_altered_and_the_skew_is_a_node_setting(
    make_node, nc, stream_name
):
    node = make_node(ingest=IngestConfig(max_timestamp_skew_ms=5000))
    with node_client(node.api_url) as api:
        create_stream(api, stream_name)
        altered = api.patch(f"/v1/streams/{stream_name}", json={"timestamp_type": "create"})
        assert altered.json()["timestamp_type"] == "create"
        subject = f"{stream_name}.in"
        near = _now_ms() - 1000
        assert (await _request(nc, subject, b"near", {"Liftlog-Timestamp": str(near)}))[
            "offset"
        ] == 0
        past = str(_now_ms() - 60_000)  # within the default hour, beyond this node's 5 s
        refused = await _request(nc, subject, b"past", {"Liftlog-Timestamp": past})
        assert refused["error"]["code"] == "invalid_timestamp"
        assert fetch(api, stream_name)["records"][0]["timestamp"] == near


# ----------------------------------------------------------------------------- growth


async def test_partitions_grow_on_a_running_cluster(make_node, nc, stream_name):
    nodes = [make_node(i) for i in (1, 2)]
    subject = f"{stream_name}.in"
    with node_client(nodes[0].api_url) as api:
        create_stream(api, stream_name, replication_factor=2)
        assert (await _request(nc, subject, b"p0"))["offset"] == 0
        grown = api.patch(f"/v1/streams/{stream_name}", json={"partitions": 3})
        assert grown.status_code == 200, grown.text
        body = grown.json()
        assert body["spec"]["partitions"] == 3
        assert [p["partition"] for p in body["partitions"]] == [0, 1, 2]
        assert all(sorted(p["replicas"]) == [1, 2] for p in body["partitions"])
        shrink = api.patch(f"/v1/streams/{stream_name}", json={"partitions": 2})
        assert shrink.status_code == 409 and "can only grow" in shrink.json()["error"]["message"]

    for p in (1, 2):

        async def stored(p: int = p) -> dict[str, Any] | None:
            try:
                answer = await _request(nc, f"{subject}.{p}", f"new-{p}".encode())
            except nats.errors.NoRespondersError:
                return None  # the new leader is not listening yet: nothing was stored
            return answer if "offset" in answer else None

        ack = await _poll(stored, f"partition {p} taking publishes")
        assert (ack["partition"], ack["offset"]) == (p, 0)
    async with Client(nodes[1].api_url) as client:
        assert (await client.publish(stream_name, "via client", partition=2)).offset == 1
    with node_client(nodes[1].api_url) as api:
        described = api.get(f"/v1/streams/{stream_name}").json()
        assert [p["high_watermark"] for p in described["partitions"]] == [1, 1, 2]
        # every replica holds the records, the new partitions' followers too (a follower
        # learns the HW on its next fetch)
        expected = [["p0"], ["new-1"], ["new-2", "via client"]]

        def replicated() -> list[list[str]]:
            fetched = [fetch(api, stream_name, p, from_follower="true") for p in (0, 1, 2)]
            return [[r["value"] for r in f["records"]] for f in fetched]

        wait_for(lambda: replicated() == expected, 15, message="broker 2 holding every record")


async def test_an_encrypted_stream_grows_with_data_keys_for_its_new_partitions(
    make_node, stream_name
):
    node = make_node(**encrypted_node_overrides(new_master_key()))
    with node_client(node.api_url) as api:
        create_stream(api, stream_name, encryption=True)
        grown = api.patch(f"/v1/streams/{stream_name}", json={"partitions": 2})
        assert grown.status_code == 200, grown.text
    async with Client(node.api_url) as client:
        ack = await client.publish(stream_name, "secret in the new partition", partition=1)
    assert (ack.partition, ack.offset) == (1, 0)
    files = sorted(Path(node.config.data_dir).glob(f"streams/{stream_name}@*/1/*.log"))
    assert files and not any(b"secret in the new partition" in f.read_bytes() for f in files)
    with node_client(node.api_url) as api:
        values = [r["value"] for r in fetch(api, stream_name, 1)["records"]]
    assert values == ["secret in the new partition"]


def test_growth_stays_within_the_partition_limits(make_node, stream_name):
    limits = LimitsConfig(max_partitions_per_stream=3, max_partitions_total=3)
    node = make_node(limits=limits)
    with node_client(node.api_url) as api:
        create_stream(api, stream_name, partitions=2)
        create_stream(api, f"{stream_name}-b")
        per_stream = api.patch(f"/v1/streams/{stream_name}", json={"partitions": 4})
        assert per_stream.status_code == 422
        assert "max_partitions_per_stream" in per_stream.json()["error"]["message"]
        total = api.patch(f"/v1/streams/{stream_name}", json={"partitions": 3})
        assert total.status_code == 409 and total.json()["error"]["code"] == "limit_exceeded"
        assert api.get(f"/v1/streams/{stream_name}").json()["spec"]["partitions"] == 2
