"""Partition reassignment on real clusters under acks=all load.

A partition moves from [a, b] to [b, c] (the leader a leaves, so leadership moves too): the
new replica catches up and joins the ISR before the old one is dropped, every acknowledged
record is on both target replicas afterwards, and the removed broker deleted its data. A
controller failover mid-way (the new replica held back so the move is waiting on it) resumes
from the reassignment znode. A cancelled move (the new replica held back by the throttle)
goes back to [a, b]: the added broker deletes what it copied, nothing acknowledged is lost.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from spark_log.client import Client
from tests.fault.test_failover import ACKED_PER_ROUND, Load, _all_records, _describe
from tests.integration.conftest import create_stream
from tests.support.waiting import wait_for

LIFTLOG = str(Path(sys.executable).parent / "liftlog")
CLI_TIMEOUT_S = 60.0
MOVE_TIMEOUT_S = 60.0


def _reassign_cli(server: str, stream: str, replicas: list[int]) -> str:
    argv = [LIFTLOG, "stream", "reassign", stream, "--partition", "0"]
    argv += ["--replicas", ",".join(map(str, replicas)), "--server", server]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=CLI_TIMEOUT_S, check=True)
    return done.stdout


def _pending(node, stream: str) -> list[dict]:
    with httpx.Client(base_url=node.api_url, timeout=10) as api:
        return api.get(f"/v1/streams/{stream}/reassign").json()["partitions"]


def _moved(node, stream: str, target: list[int]) -> bool:
    return _describe(node, stream)["replicas"] == target and not _pending(node, stream)


def _partition_dirs(node, stream: str) -> list[Path]:
    return list(Path(node.config.data_dir).glob(f"streams/{stream}@*/0"))


def _check_acked_on(nodes, stream: str, acked: dict[str, int]) -> None:
    hw = _describe(nodes[0], stream)["high_watermark"]
    for node in nodes:
        wait_for(lambda node=node: len(_all_records(node, stream)) >= hw, 30, message="caught up")
    logs = [[(r["offset"], r["value"]) for r in _all_records(n, stream)][:hw] for n in nodes]
    assert logs[0] == logs[1], "target replicas differ below the HW"
    by_value = {v: o for o, v in logs[0]}
    counts = Counter(v for _o, v in logs[0])
    for value, offset in acked.items():
        assert by_value.get(value) == offset, f"acked {value}@{offset} lost or moved"
        assert counts[value] == 1


def _cluster(make_node, stream: str):
    nodes = [make_node(i, replica_lag_time_max_s=3.0) for i in (1, 2, 3)]
    with httpx.Client(base_url=nodes[0].api_url, timeout=30) as api:
        create_stream(api, stream, replication_factor=2)
    before = _describe(nodes[0], stream)
    a, b = before["replicas"]
    assert before["leader"] == a
    by_id = {n.broker_id: n for n in nodes}
    (c,) = set(by_id) - {a, b}
    return nodes, by_id, a, b, c


async def test_move_one_replica_under_acks_all_load(make_node, stream_name):
    nodes, by_id, a, b, c = _cluster(make_node, stream_name)
    servers = ",".join(n.api_url for n in nodes)
    async with Client(servers, ack_timeout_s=2) as client:
        load = Load(client, stream_name)
        await load.wait_acked(ACKED_PER_ROUND, 60)
        out = _reassign_cli(by_id[c].api_url, stream_name, [b, c])
        assert f"{[a, b]} -> {[b, c]}" in out
        wait_for(lambda: _moved(by_id[b], stream_name, [b, c]), MOVE_TIMEOUT_S, message="moved")
        after = _describe(by_id[b], stream_name)
        assert after["leader"] == b and sorted(after["isr"]) == sorted([b, c])
        await load.wait_acked(len(load.acked) + ACKED_PER_ROUND, 60)
        await load.finish()
    wait_for(lambda: not _partition_dirs(by_id[a], stream_name), 30, message="a's data deleted")
    _check_acked_on([by_id[b], by_id[c]], stream_name, load.acked)


@pytest.mark.slow
async def test_a_controller_failover_mid_reassignment_resumes(make_node, stream_name):
    nodes, by_id, a, b, c = _cluster(make_node, stream_name)
    servers = ",".join(n.api_url for n in nodes)
    async with Client(servers, ack_timeout_s=2) as client:
        load = Load(client, stream_name)
        await load.wait_acked(ACKED_PER_ROUND, 60)
        by_id[c].pause()  # the new replica cannot catch up: the move waits on it
        try:
            _reassign_cli(by_id[b].api_url, stream_name, [b, c])
            wait_for(
                lambda: [p["phase"] for p in _pending(by_id[b], stream_name)] == ["catching_up"],
                30,
                message="the move waits for the new replica",
            )
            with httpx.Client(base_url=by_id[b].api_url, timeout=10) as api:
                controller = api.get("/v1/cluster").json()["controller"]
            if controller != c:
                by_id[controller].kill()
                survivor = by_id[b] if controller != b else by_id[a]
                wait_for(
                    lambda: (
                        httpx.get(f"{survivor.api_url}/v1/cluster", timeout=10).json()["controller"]
                        not in (None, controller)
                    ),
                    30,
                    message="a new controller",
                )
                by_id[controller].start()
        finally:
            by_id[c].resume()
        wait_for(lambda: _moved(by_id[b], stream_name, [b, c]), MOVE_TIMEOUT_S, message="moved")
        await load.wait_acked(len(load.acked) + ACKED_PER_ROUND, 60)
        await load.finish()
    wait_for(lambda: not _partition_dirs(by_id[a], stream_name), 30, message="a's data deleted")
    _check_acked_on([by_id[b], by_id[c]], stream_name, load.acked)


THROTTLE_BYTES_PER_S = 1_000_000
THROTTLED_BYTES = 3_000_000
RECORD_BYTES = 1000
RECORDS_PER_POST = 100


@pytest.mark.slow
def test_the_throttle_bounds_the_copy_rate_of_an_added_replica(make_node, stream_name):
    nodes = [
        make_node(i, reassignment_throttle_bytes_per_s=THROTTLE_BYTES_PER_S) for i in (1, 2, 3)
    ]
    with httpx.Client(base_url=nodes[0].api_url, timeout=30) as api:
        create_stream(api, stream_name, replication_factor=2)
        a, b = _describe(nodes[0], stream_name)["replicas"]
        (c,) = {1, 2, 3} - {a, b}
        leader = nodes[a - 1]
        value = "x" * RECORD_BYTES
        body = {"records": [{"value": value}] * RECORDS_PER_POST}
        for _ in range(THROTTLED_BYTES // (RECORD_BYTES * RECORDS_PER_POST)):
            httpx.post(
                f"{leader.api_url}/v1/streams/{stream_name}/partitions/0/records",
                json=body,
                params={"encoding": "utf-8"},
                timeout=30,
            ).raise_for_status()
        log_bytes = _describe(nodes[0], stream_name)["log_end_offset"] * RECORD_BYTES
    started = time.monotonic()
    _reassign_cli(nodes[0].api_url, stream_name, [a, b, c])
    wait_for(lambda: _moved(nodes[0], stream_name, [a, b, c]), MOVE_TIMEOUT_S, message="moved")
    elapsed = time.monotonic() - started
    rate = log_bytes / elapsed
    print(f"reassignment copy of ~{log_bytes / 1e6:.1f} MB: {elapsed:.2f}s, {rate / 1e6:.2f} MB/s")
    # one second's worth may come at once, the rest waits for the bucket
    assert elapsed >= (log_bytes - THROTTLE_BYTES_PER_S) / THROTTLE_BYTES_PER_S * 0.9


CANCEL_THROTTLE_BYTES_PER_S = 20_000
BACKLOG_POSTS = 10  # 1 MB the held-back replica would need ~50 s to copy


def _reassign_cancel_cli(server: str, stream: str, *extra: str) -> subprocess.CompletedProcess:
    argv = [LIFTLOG, "stream", "reassign", stream, "--cancel", *extra, "--server", server]
    return subprocess.run(argv, capture_output=True, text=True, timeout=CLI_TIMEOUT_S)


def _post_backlog(leader, stream: str) -> None:
    body = {"records": [{"value": "x" * RECORD_BYTES}] * RECORDS_PER_POST}
    for _ in range(BACKLOG_POSTS):
        httpx.post(
            f"{leader.api_url}/v1/streams/{stream}/partitions/0/records",
            json=body,
            params={"encoding": "utf-8"},
            timeout=30,
        ).raise_for_status()


def _log_end_offset_on(node, stream: str) -> int:
    with httpx.Client(base_url=node.api_url, timeout=10) as api:
        resp = api.get(f"/v1/streams/{stream}/partitions/0")
        return resp.json()["log_end_offset"] if resp.status_code == 200 else 0


async def test_cancel_under_acks_all_load_goes_back_to_the_original_replicas(
    make_node, stream_name
):
    nodes = [
        make_node(
            i,
            replica_lag_time_max_s=3.0,
            reassignment_throttle_bytes_per_s=CANCEL_THROTTLE_BYTES_PER_S,
        )
        for i in (1, 2, 3)
    ]
    with httpx.Client(base_url=nodes[0].api_url, timeout=30) as api:
        create_stream(api, stream_name, replication_factor=2)
    a, b = _describe(nodes[0], stream_name)["replicas"]
    by_id = {n.broker_id: n for n in nodes}
    (c,) = set(by_id) - {a, b}
    _post_backlog(by_id[a], stream_name)
    servers = ",".join(n.api_url for n in nodes)
    async with Client(servers, ack_timeout_s=2) as client:
        load = Load(client, stream_name)
        await load.wait_acked(ACKED_PER_ROUND, 60)
        _reassign_cli(by_id[b].api_url, stream_name, [b, c])
        wait_for(
            lambda: (
                _log_end_offset_on(by_id[c], stream_name) > 0
                and [p["phase"] for p in _pending(by_id[b], stream_name)] == ["catching_up"]
            ),
            30,
            message="the throttled new replica copies, out of the ISR",
        )
        cancelled = _reassign_cancel_cli(by_id[c].api_url, stream_name, "--partition", "0")
        assert cancelled.returncode == 0, cancelled.stderr
        assert "cancel recorded" in cancelled.stdout
        wait_for(lambda: _moved(by_id[a], stream_name, [a, b]), MOVE_TIMEOUT_S, message="back")
        after = _describe(by_id[a], stream_name)
        assert after["leader"] in (a, b) and after["leader"] in after["isr"]
        assert set(after["isr"]) <= {a, b}
        await load.wait_acked(len(load.acked) + ACKED_PER_ROUND, 60)
        await load.finish()
    wait_for(lambda: not _partition_dirs(by_id[c], stream_name), 30, message="c's data deleted")
    _check_acked_on([by_id[a], by_id[b]], stream_name, load.acked)

    nothing = _reassign_cancel_cli(by_id[a].api_url, stream_name)
    assert nothing.returncode == 1
    assert f"liftlog: no_reassignment: stream '{stream_name}' has no reassignment" in (
        nothing.stderr
    )
    unknown = _reassign_cancel_cli(by_id[a].api_url, f"{stream_name}-missing")
    assert unknown.returncode == 1 and "stream_not_found" in unknown.stderr
