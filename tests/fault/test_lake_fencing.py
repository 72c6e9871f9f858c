"""Lake export across leader changes on real 3-node clusters sharing one Delta lake.

A leader killed with SIGKILL while it exports continuously: the new leader continues at the
table's app-transaction version, so the table ends up with every committed offset exactly
once (no gap, no overlap) and its commits chain end to start. A leader SIGSTOPped past its
session and resumed after the new leader exported: it cannot add a commit.
"""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import httpx

from spark_log.client import Client
from spark_log.errors import LiftlogError
from tests.integration.conftest import create_stream
from tests.support.acked_load import AckedLoad
from tests.support.lake_stores import LakeUnderTest, open_delta
from tests.support.waiting import wait_for

BATCH = 50
PUBLISHERS = 4


def _describe(node: Any, stream: str) -> dict[str, Any]:
    with httpx.Client(base_url=node.api_url, timeout=10) as api:
        return api.get(f"/v1/streams/{stream}").json()


def _partition(node: Any, stream: str) -> dict[str, Any]:
    return _describe(node, stream)["partitions"][0]


def _own_view(node: Any, stream: str) -> dict[str, Any]:
    with httpx.Client(base_url=node.api_url, timeout=10) as api:
        return api.get(f"/v1/streams/{stream}/partitions/0").json()


def _log_values(node: Any, stream: str) -> list[str]:
    values: list[str] = []
    with httpx.Client(base_url=node.api_url, timeout=30) as api:
        while True:
            body = api.get(
                f"/v1/streams/{stream}/partitions/0/records",
                params={"offset": len(values), "max_records": 10_000, "encoding": "utf-8"},
            ).json()
            if not body["records"]:
                return values
            values.extend(r["value"] for r in body["records"])


def _commit_spans(uri: str) -> list[tuple[int, int, int]]:
    """(start, end, broker) of every export commit, oldest first."""
    history = reversed(open_delta(uri).history())
    return [
        (h["liftlog"]["start_offset"], h["liftlog"]["end_offset"], h["liftlog"]["broker_id"])
        for h in history
        if "liftlog" in h
    ]


def _check_lake_matches_log(uri: str, values: list[str]) -> None:
    table = open_delta(uri).to_pyarrow_table().sort_by("offset")
    assert table.column("offset").to_pylist() == list(range(len(values))), "gap or overlap"
    assert [v.decode() for v in table.column("value").to_pylist()] == values
    spans = _commit_spans(uri)
    assert spans[0][0] == 0 and spans[-1][1] == len(values)
    for (_s, end, _b), (start, _e, _b2) in itertools.pairwise(spans):
        assert start == end, f"commits do not chain: {spans}"


class BatchLoad(AckedLoad):
    """acks=all producer batches from a few publishers, every acked batch recorded."""

    def __init__(self, client: Client, stream: str) -> None:
        super().__init__(client, stream, PUBLISHERS)

    async def _run(self, worker: int) -> None:
        seq = 0
        while not self.stop.is_set():
            values = [f"w{worker}-{seq}-{i}" for i in range(BATCH)]
            seq += 1
            try:
                ack = await self.client.publish_batch(self.stream, values, timeout_s=2)
            except LiftlogError:
                continue
            if ack is not None:
                self._record(ack.offset, values)


async def test_leader_kill9_mid_export_new_leader_continues_without_gap_or_overlap(
    make_node, stream_name, test_lake: LakeUnderTest
):
    lake = test_lake.config(export_interval_s=0.2, export_min_bytes=1)
    nodes = [make_node(i, replica_lag_time_max_s=3.0, lake=lake) for i in (1, 2, 3)]
    with httpx.Client(base_url=nodes[0].api_url, timeout=30) as api:
        created = create_stream(api, stream_name, replication_factor=3)
    old_id = created["partitions"][0]["leader"]
    old = next(n for n in nodes if n.broker_id == old_id)
    survivor = next(n for n in nodes if n is not old)
    async with Client(",".join(n.api_url for n in nodes), ack_timeout_s=2) as client:
        load = BatchLoad(client, stream_name)
        await load.wait_acked(40, 60)
        await asyncio.to_thread(
            wait_for,
            lambda: (_partition(old, stream_name)["lake_offset"] or 0) >= 10 * BATCH,
            30,
            message="the first leader exported several rounds",
        )
        old.kill()  # exports run back to back: most likely one was in flight
        await asyncio.to_thread(
            wait_for,
            lambda: _partition(survivor, stream_name)["leader"] not in (old_id, -1),
            30,
            message="a new leader from the ISR",
        )
        await load.wait_acked(len(load.acked) + 40, 60)
        await load.finish()
    new_id = _partition(survivor, stream_name)["leader"]
    new = next(n for n in nodes if n.broker_id == new_id)
    with httpx.Client(base_url=survivor.api_url, timeout=120) as api:
        flushed = api.post(f"/v1/streams/{stream_name}/flush").json()
    hw = flushed["partitions"][0]["high_watermark"]
    assert flushed["partitions"][0]["lake_offset"] == hw
    values = _log_values(new, stream_name)[:hw]
    uri = flushed["lake"]["uri"]
    _check_lake_matches_log(uri, values)
    for offset, batch in load.acked.items():
        assert values[offset : offset + BATCH] == batch, f"acked batch at {offset} differs"
    brokers = {b for _s, _e, b in _commit_spans(uri)}
    assert {old_id, new_id} <= brokers, "both leaders exported"


async def test_a_sigstopped_deposed_leader_cannot_commit_after_the_new_leader_exported(
    make_node, stream_name, test_lake: LakeUnderTest
):
    # the first leader's records become due 2 s after they were published: it is stopped
    # at once, and resumed after the election (> the 4 s session timeout), so its exporter
    # wakes up overdue the moment it runs, before it learns it was deposed
    lake = test_lake.config(export_interval_s=2.0, export_min_bytes=1 << 40)
    nodes = [make_node(i, lake=lake) for i in (1, 2, 3)]
    with httpx.Client(base_url=nodes[0].api_url, timeout=30) as api:
        created = create_stream(api, stream_name, replication_factor=3)
    old_id = created["partitions"][0]["leader"]
    old = next(n for n in nodes if n.broker_id == old_id)
    other = next(n for n in nodes if n is not old)
    with httpx.Client(base_url=old.api_url, timeout=30) as api:
        resp = api.post(
            f"/v1/streams/{stream_name}/partitions/0/records",
            json={"records": [{"value": f"r{i}"} for i in range(20)]},
            params={"encoding": "utf-8"},
        )
        assert resp.status_code == 200, resp.text  # acks=all: on every replica
    old.pause()  # SIGSTOP past the ZooKeeper session: deposed, but it does not know yet
    try:
        wait_for(
            lambda: _partition(other, stream_name)["leader"] not in (old_id, -1),
            40,
            message="a new leader while the old one is stopped",
        )
        wait_for(
            lambda: _partition(other, stream_name)["high_watermark"] == 20,
            30,
            message="the new leader's HW covers the records (its followers fetched)",
        )
        with httpx.Client(base_url=other.api_url, timeout=120) as api:
            flushed = api.post(f"/v1/streams/{stream_name}/flush").json()
        assert flushed["partitions"][0]["lake_offset"] == 20
    finally:
        old.resume()
    uri = flushed["lake"]["uri"]
    version = open_delta(uri).version()
    new_id = _partition(other, stream_name)["leader"]
    assert [b for _s, _e, b in _commit_spans(uri)] == [new_id]
    wait_for(
        lambda: _own_view(old, stream_name)["role"] == "follower",
        60,
        message="the resumed old leader learns it is a follower",
    )
    assert open_delta(uri).version() == version, "the deposed leader changed the table"
    assert [b for _s, _e, b in _commit_spans(uri)] == [new_id]
    _check_lake_matches_log(uri, [f"r{i}" for i in range(20)])
    for node in nodes:  # every broker describes the lake offset, followers included
        body = _describe(node, stream_name)
        assert body["lake"]["uri"] == uri and body["partitions"][0]["lake_offset"] == 20
    attempted = "the lake table says offset 20" in Path(old.log_path).read_text()
    print(f"deposed leader woke up and found the lake moved on: {attempted}")
