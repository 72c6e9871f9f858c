"""Auto-pause on real nodes: a partition idle for ``auto_pause_ms`` is marked idle-paused in
ZooKeeper, and the next publish (raw NATS, with or without a reply subject, or REST) or
consumer fetch resumes it without losing the publish. An operator's pause is another matter:
only an operator's resume lifts it (and that clears the idle marks too)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import nats

from spark_log.client import Client
from tests.integration.conftest import create_stream, fetch, node_client
from tests.support.waiting import wait_for

AUTO_PAUSE_MS = 1000
IDLE_TIMEOUT_S = 15.0
LIFTLOG = str(Path(sys.executable).parent / "liftlog")


async def _request(nc: nats.NATS, subject: str, data: bytes) -> dict[str, Any]:
    msg = await nc.request(subject, data, timeout=10)
    answer: dict[str, Any] = json.loads(msg.data)
    return answer


def _describe(api: httpx.Client, stream: str) -> dict[str, Any]:
    resp = api.get(f"/v1/streams/{stream}")
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


def _wait_idle_paused(api: httpx.Client, stream: str, partitions: list[int]) -> None:
    """Poll describe (which reads ZooKeeper, never the partition: it does not wake it)."""
    wait_for(
        lambda: _describe(api, stream)["idle_paused_partitions"] == partitions,
        IDLE_TIMEOUT_S,
        message=f"{stream} idle-paused {partitions}",
    )


def _values(api: httpx.Client, stream: str) -> list[str]:
    return [r["value"] for r in fetch(api, stream)["records"]]


async def test_a_raw_nats_publish_resumes_an_idle_partition_and_is_stored(api, nc, stream_name):
    created = create_stream(api, stream_name, auto_pause_ms=AUTO_PAUSE_MS)
    assert created["auto_pause_ms"] == AUTO_PAUSE_MS
    assert created["idle_paused_partitions"] == []
    subject = f"{stream_name}.in"
    assert (await _request(nc, subject, b"first"))["offset"] == 0
    _wait_idle_paused(api, stream_name, [0])
    assert _describe(api, stream_name)["paused"] is False  # the operator's flag is untouched

    ack = await _request(nc, subject, b"wakes it")
    assert ack == {"stream": stream_name, "partition": 0, "offset": 1}
    assert _describe(api, stream_name)["idle_paused_partitions"] == []  # resumed before the ack

    _wait_idle_paused(api, stream_name, [0])
    await nc.publish(subject, b"no reply subject")  # nobody to tell: it must still be stored
    await nc.flush()
    wait_for(
        lambda: _describe(api, stream_name)["idle_paused_partitions"] == [],
        IDLE_TIMEOUT_S,
        message="resumed by a publish without a reply subject",
    )
    assert _values(api, stream_name) == ["first", "wakes it", "no reply subject"]


def test_a_rest_publish_resumes_an_idle_partition(api, stream_name):
    create_stream(api, stream_name, auto_pause_ms=AUTO_PAUSE_MS)
    _wait_idle_paused(api, stream_name, [0])
    url = f"/v1/streams/{stream_name}/partitions/0/records"
    resp = api.post(url, json={"records": [{"value": "over rest"}]}, params={"encoding": "utf-8"})
    assert resp.status_code == 200, resp.text
    assert _describe(api, stream_name)["idle_paused_partitions"] == []
    assert _values(api, stream_name) == ["over rest"]


async def test_the_client_creates_with_auto_pause_and_its_publish_resumes(node, api, stream_name):
    async with Client(node.api_url) as client:
        created = await client.create_stream(
            stream_name,
            f"{stream_name}.in",
            auto_pause_ms=AUTO_PAUSE_MS,
            auto_pause_disable_if_subscribers=True,
        )
        assert (created.auto_pause_ms, created.auto_pause_disable_if_subscribers) == (
            AUTO_PAUSE_MS,
            True,
        )
        _wait_idle_paused(api, stream_name, [0])
        assert (await client.publish(stream_name, "via client")).offset == 0
    assert _describe(api, stream_name)["idle_paused_partitions"] == []
    assert _values(api, stream_name) == ["via client"]


def test_a_consumer_fetch_resumes_an_idle_partition(api, stream_name):
    create_stream(api, stream_name, partitions=2, subject=f"{stream_name}.in", auto_pause_ms=500)
    _wait_idle_paused(api, stream_name, [0, 1])
    # no auto-pause from now on (the marks stay until a resume), so partition 1 stays resumed
    api.patch(f"/v1/streams/{stream_name}", json={"auto_pause_ms": None}).raise_for_status()
    assert fetch(api, stream_name, 1)["records"] == []
    wait_for(
        lambda: _describe(api, stream_name)["idle_paused_partitions"] == [0],
        IDLE_TIMEOUT_S,
        message="partition 1 resumed by the fetch, partition 0 still idle",
    )


async def test_an_operator_pause_is_not_lifted_by_a_publish(api, nc, stream_name):
    create_stream(api, stream_name, auto_pause_ms=AUTO_PAUSE_MS)
    _wait_idle_paused(api, stream_name, [0])
    paused = api.post(f"/v1/streams/{stream_name}/pause").json()
    assert paused["paused"] is True
    subject = f"{stream_name}.in"
    refused = await _request(nc, subject, b"refused")
    assert refused["error"]["code"] == "stream_paused"
    assert refused["error"]["message"] == f"stream {stream_name} is paused"
    assert _describe(api, stream_name)["paused"] is True

    resumed = api.post(f"/v1/streams/{stream_name}/resume").json()
    assert (resumed["paused"], resumed["idle_paused_partitions"]) == (False, [])
    assert (await _request(nc, subject, b"stored"))["offset"] == 0
    assert _values(api, stream_name) == ["stored"]


async def test_auto_pause_is_set_by_the_cli_alter_and_cleared_by_patch(node, api, nc, stream_name):
    create_stream(api, stream_name)
    assert _describe(api, stream_name)["auto_pause_ms"] is None
    alter = [LIFTLOG, "stream", "alter", stream_name, "--auto-pause-ms", str(AUTO_PAUSE_MS)]
    done = subprocess.run(
        [*alter, "--server", node.api_url],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"auto_pause_ms={AUTO_PAUSE_MS}" in done.stdout
    _wait_idle_paused(api, stream_name, [0])

    cleared = api.patch(f"/v1/streams/{stream_name}", json={"auto_pause_ms": None})
    assert cleared.status_code == 200, cleared.text
    assert cleared.json()["auto_pause_ms"] is None
    assert cleared.json()["idle_paused_partitions"] == [0]  # until the next publish
    assert (await _request(nc, f"{stream_name}.in", b"x"))["offset"] == 0
    assert _describe(api, stream_name)["idle_paused_partitions"] == []
    refused = api.patch(f"/v1/streams/{stream_name}", json={"auto_pause_ms": 0})
    assert refused.status_code == 422, refused.text


async def test_a_replicated_partition_resumes_with_every_record_on_the_follower(
    make_node, nc, stream_name
):
    nodes = [make_node(i) for i in (1, 2)]
    with node_client(nodes[0].api_url) as api:
        create_stream(api, stream_name, replication_factor=2, auto_pause_ms=AUTO_PAUSE_MS)
        subject = f"{stream_name}.in"
        assert (await _request(nc, subject, b"before"))["offset"] == 0
        _wait_idle_paused(api, stream_name, [0])
        acks = [await _request(nc, subject, f"after-{i}".encode()) for i in range(3)]
        assert [a.get("offset") for a in acks] == [1, 2, 3], acks  # acks=all: both replicas

        def both_replicas_at(offset: int) -> bool:
            partition = _describe(api, stream_name)["partitions"][0]
            leos = partition["replica_log_end_offsets"] or {}
            return sorted(leos.values()) == [offset, offset]

        wait_for(lambda: both_replicas_at(4), IDLE_TIMEOUT_S, message="follower caught up")
    expected = ["before", "after-0", "after-1", "after-2"]
    for each in nodes:  # the leader's and the follower's copy alike (the follower learns the
        with node_client(each.api_url) as api:  # HW on its next fetch, hence the poll)
            wait_for(
                lambda api=api: (
                    [r["value"] for r in fetch(api, stream_name, from_follower="true")["records"]]
                    == expected
                ),
                IDLE_TIMEOUT_S,
                message=f"every record readable on broker {each.broker_id}",
            )
