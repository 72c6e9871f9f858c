"""The activity stream on three real nodes: opt-in, one event per admin operation in order,
strictly increasing ids, and no event lost or repeated when ``__activity``'s leader is killed."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from spark_log.client import Client
from spark_log.stream_spec import ACTIVITY_STREAM
from tests.integration.conftest import create_stream, node_client
from tests.support.spark_session import liftlog_reader
from tests.support.waiting import wait_for

LIFTLOG = str(Path(sys.executable).parent / "liftlog")
DRAIN_TIMEOUT_S = 40.0


@pytest.fixture
def cluster(make_node: Any) -> list[Any]:
    return [make_node(i) for i in (1, 2, 3)]


def _status(node: Any) -> dict[str, Any]:
    with node_client(node.api_url) as api:
        status: dict[str, Any] = api.get("/v1/cluster/activity").json()
    return status


def _events(node: Any) -> list[dict[str, Any]]:
    """Every event, read from the partition's leader (``node`` says which it is)."""
    with node_client(node.api_url) as api:
        leader = api.get(f"/v1/streams/{ACTIVITY_STREAM}").json()["partitions"][0]["leader"]
        url = next(
            b["api_url"]
            for b in api.get("/v1/cluster").json()["brokers"]
            if b["broker_id"] == leader
        )
    with node_client(url) as api:
        body = api.get(
            f"/v1/streams/{ACTIVITY_STREAM}/partitions/0/records",
            params={"start": "earliest", "max_records": 10_000, "encoding": "utf-8"},
        ).json()
    return [json.loads(r["value"]) for r in body["records"]]


def _drained(node: Any) -> bool:
    return _status(node)["pending"] == 0


def _admin_ops(nodes: list[Any], stream: str) -> list[tuple[str, str]]:
    """A burst of operations through every node; returns (op, stream) expected in order."""
    with node_client(nodes[0].api_url) as api:
        create_stream(api, stream)
    with node_client(nodes[1].api_url) as api:
        api.post(f"/v1/streams/{stream}/pause").raise_for_status()
        api.post(f"/v1/streams/{stream}/pause").raise_for_status()  # no change: no event
        api.post(f"/v1/streams/{stream}/resume").raise_for_status()
    with node_client(nodes[2].api_url) as api:
        api.post(f"/v1/streams/{stream}/readonly").raise_for_status()
        api.post(f"/v1/streams/{stream}/readwrite").raise_for_status()
        api.patch(f"/v1/streams/{stream}", json={"retention_ms": 60_000}).raise_for_status()
        api.delete(f"/v1/streams/{stream}").raise_for_status()
    ops = [
        "create_stream",
        "pause_stream",
        "resume_stream",
        "set_read_only",
        "set_read_only",
        "alter_stream",
        "delete_stream",
    ]
    return [(op, stream) for op in ops]


def _ops_of(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["op"], e["stream"]) for e in events if "stream" in e]


def _strictly_increasing(ids: list[int]) -> bool:
    return all(a < b for a, b in itertools.pairwise(ids))


def test_nothing_is_recorded_until_enabled(cluster: list[Any], stream_name: str) -> None:
    with node_client(cluster[0].api_url) as api:
        create_stream(api, stream_name)
        assert api.get(f"/v1/streams/{ACTIVITY_STREAM}").status_code == 404
    assert _status(cluster[1]) == {"enabled": False, "stream": ACTIVITY_STREAM, "pending": 0}


async def test_every_operation_once_in_order(cluster: list[Any], stream_name: str) -> None:
    enabled = subprocess.run(
        [LIFTLOG, "cluster", "activity", "enable", "--server", cluster[0].api_url],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert enabled.returncode == 0, enabled.stderr
    assert "activity enabled (__activity" in enabled.stdout
    expected = _admin_ops(cluster, stream_name)
    wait_for(lambda: _drained(cluster[0]), DRAIN_TIMEOUT_S, message="the queue drained")
    events = _events(cluster[1])
    assert _ops_of(events) == expected
    ids = [e["id"] for e in events]
    assert _strictly_increasing(ids)
    assert events[0]["partitions"] == 1 and events[5]["changes"] == {"retention_ms": 60_000}
    async with Client(cluster[2].api_url) as client:  # the client reads it like any stream
        records = [
            r async for r in client.subscribe(ACTIVITY_STREAM, 0, start="earliest", stop="latest")
        ]
    assert [json.loads(r.value)["id"] for r in records] == ids


def test_killing_the_publisher_loses_and_repeats_nothing(
    cluster: list[Any], stream_name: str
) -> None:
    with node_client(cluster[0].api_url) as api:
        api.put("/v1/cluster/activity", json={"enabled": True}).raise_for_status()
        leader_id = api.get(f"/v1/streams/{ACTIVITY_STREAM}").json()["partitions"][0]["leader"]
    leader = next(n for n in cluster if n.broker_id == leader_id)
    others = [n for n in cluster if n is not leader]
    first = _admin_ops([others[0]] * 3, f"{stream_name}-a")
    leader.kill()
    second = _admin_ops([others[1]] * 3, f"{stream_name}-b")
    wait_for(lambda: _drained(others[0]), DRAIN_TIMEOUT_S, message="drained by a new leader")
    events = _events(others[1])
    assert _ops_of(events) == first + second
    assert _strictly_increasing([e["id"] for e in events])


@pytest.mark.slow
def test_spark_reads_the_activity_stream(
    cluster: list[Any], stream_name: str, spark: SparkSession
) -> None:
    with node_client(cluster[0].api_url) as api:
        api.put("/v1/cluster/activity", json={"enabled": True}).raise_for_status()
    expected = _admin_ops(cluster, stream_name)
    wait_for(lambda: _drained(cluster[0]), DRAIN_TIMEOUT_S, message="the queue drained")
    servers = ",".join(n.api_url for n in cluster)
    frame = liftlog_reader(spark, servers, ACTIVITY_STREAM)
    rows = frame.selectExpr("offset", "CAST(value AS STRING) AS value").orderBy("offset").collect()
    events = [json.loads(r["value"]) for r in rows]
    assert _ops_of(events) == expected
    assert _strictly_increasing([e["id"] for e in events])


def _group_events(events: list[dict[str, Any]], group: str) -> list[tuple[str, str, str]]:
    return [
        (e["op"], e["member_id"], e.get("reason", "")) for e in events if e.get("group") == group
    ]


def test_group_membership_changes_are_recorded(cluster: list[Any], stream_name: str) -> None:
    """A join, a leave and a session that expired (the member stopped heartbeating), each
    recorded once, after the stream's creation and with growing ids."""
    group = f"{stream_name}-g"
    with node_client(cluster[0].api_url) as api:
        api.put("/v1/cluster/activity", json={"enabled": True}).raise_for_status()
        create_stream(api, stream_name, partitions=2)
    with node_client(cluster[1].api_url) as api:
        joined = []
        for timeout_ms in (10_000, 3_000):  # the second stops heartbeating: it expires
            resp = api.post(
                f"/v1/groups/{group}/members",
                json={"streams": [stream_name], "session_timeout_ms": timeout_ms},
            )
            assert resp.status_code == 200, resp.text
            joined.append(resp.json()["member_id"])
        api.delete(f"/v1/groups/{group}/members/{joined[0]}").raise_for_status()

    def expired_and_drained() -> list[dict[str, Any]] | None:
        if not _drained(cluster[0]):
            return None
        events = _events(cluster[2])
        return events if len(_group_events(events, group)) == 4 else None

    events = wait_for(expired_and_drained, DRAIN_TIMEOUT_S, message="the expiry recorded")
    assert _group_events(events, group) == [
        ("group_join", joined[0], ""),
        ("group_join", joined[1], ""),
        ("group_leave", joined[0], "left"),
        ("group_leave", joined[1], "removed"),
    ]
    assert _ops_of(events)[0] == ("create_stream", stream_name)
    assert _strictly_increasing([e["id"] for e in events])
