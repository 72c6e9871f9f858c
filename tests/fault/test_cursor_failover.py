"""Cursors across failovers of their ``__cursors`` partition's leader: kill -9 while a writer
sets them, and a leader that is deposed and elected again (Liftbridge issue #319: a cursor
stepped back because the returning leader answered from what it kept of its earlier term)."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import pytest

from spark_log.client import Client
from spark_log.client.group_session import backoff_s
from spark_log.config import LogConfig
from spark_log.cursor_record import cursors_partition
from spark_log.cursors_config import CursorsConfig
from spark_log.errors import LiftlogError
from spark_log.stream_spec import CURSORS_STREAM
from tests.integration.conftest import create_stream, node_client
from tests.support.waiting import wait_for, wait_for_async

CURSOR_IDS = [f"reader-{i}" for i in range(12)]
FAILOVER_TIMEOUT_S = 40.0
SNAPSHOT_MIN_RECORDS = 40
SET_ROUNDS = 150


def _cursor_partitions(node: Any) -> list[dict[str, Any]]:
    with node_client(node.api_url) as api:
        partitions: list[dict[str, Any]] = api.get(f"/v1/streams/{CURSORS_STREAM}").json()[
            "partitions"
        ]
    return partitions


def _leader_of(node: Any, partition: int) -> int:
    leader: int = _cursor_partitions(node)[partition]["leader"]
    return leader


def _in_sync(node: Any, partition: int) -> bool:
    return sorted(_cursor_partitions(node)[partition]["isr"]) == [1, 2, 3]


async def _set_until_stored(client: Client, cursor_id: str, stream: str, offset: int) -> None:
    """Retries while the partition has no leader yet (the node answers 503 or 421 then)."""
    deadline = time.monotonic() + FAILOVER_TIMEOUT_S
    for attempt in itertools.count():
        try:
            await client.set_cursor(cursor_id, stream, 0, offset)
            return
        except LiftlogError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(backoff_s(attempt))  # the client's own backoff


class _Writer:
    """Sets every cursor to increasing offsets; remembers what was acknowledged and what was
    only attempted (a set whose answer was lost may or may not be stored)."""

    def __init__(self, client: Client, stream: str) -> None:
        self.client = client
        self.stream = stream
        self.acked: dict[str, int] = {}
        self.attempted: dict[str, set[int]] = {c: set() for c in CURSOR_IDS}
        self.rounds = 0

    async def run(self, stop: asyncio.Event) -> None:
        offset = 0
        while not stop.is_set():
            offset += 1
            for cursor_id in CURSOR_IDS:
                self.attempted[cursor_id].add(offset)
                try:
                    await self.client.set_cursor(cursor_id, self.stream, 0, offset)
                except LiftlogError:
                    continue
                self.acked[cursor_id] = offset
            self.rounds += 1


async def _cluster_with_cursors(make_node: Any, stream: str, offset: int) -> tuple[list[Any], int]:
    """Three nodes, ``stream``, every cursor of CURSOR_IDS set to ``offset``; the nodes and
    the ``__cursors`` partition of the cursors once its ISR is whole."""
    nodes = [make_node(i) for i in (1, 2, 3)]
    with node_client(nodes[0].api_url) as api:
        create_stream(api, stream)
    async with Client(nodes[0].api_url) as client:
        for cursor_id in CURSOR_IDS:
            await client.set_cursor(cursor_id, stream, 0, offset)
    partition = cursors_partition(CURSOR_IDS[0], len(_cursor_partitions(nodes[0])))
    wait_for(lambda: _in_sync(nodes[0], partition), 30, message="__cursors fully in sync")
    return nodes, partition


async def test_cursors_survive_kill9_of_their_leader(make_node: Any, stream_name: str) -> None:
    nodes, partition = await _cluster_with_cursors(make_node, stream_name, 0)
    victim_id = _leader_of(nodes[0], partition)
    victim = next(n for n in nodes if n.broker_id == victim_id)
    survivor = next(n for n in nodes if n is not victim)
    async with Client(survivor.api_url) as client:
        writer = _Writer(client, stream_name)
        stop = asyncio.Event()
        task = asyncio.create_task(writer.run(stop))
        await wait_for_async(lambda: writer.rounds >= 3, 30, message="the writer under way")
        victim.kill()
        await wait_for_async(
            lambda: _leader_of(survivor, partition) not in (victim_id, -1),
            FAILOVER_TIMEOUT_S,
            message="a new leader of the cursors' partition",
        )
        rounds_at_failover = writer.rounds
        await wait_for_async(
            lambda: writer.rounds >= rounds_at_failover + 3,
            FAILOVER_TIMEOUT_S,
            message="sets acknowledged by the new leader",
        )
        stop.set()
        await task
        for cursor_id in CURSOR_IDS:
            stored = await client.fetch_cursor(cursor_id, stream_name, 0)
            acked = writer.acked[cursor_id]
            assert stored is not None and stored >= acked, (cursor_id, stored, acked)
            assert stored in writer.attempted[cursor_id], (cursor_id, stored)


@pytest.mark.slow  # make fault; make test keeps the plain kill -9 failover
async def test_a_returning_leader_reads_the_newer_cursors(make_node: Any, stream_name: str) -> None:
    """SIGSTOP the leader past its session: another takes over and takes newer sets; the old
    one comes back, catches up and is made leader again: it must answer the newer values."""
    nodes, partition = await _cluster_with_cursors(make_node, stream_name, 10)
    described = _cursor_partitions(nodes[0])[partition]
    old_id = described["leader"]
    assert old_id == described["replicas"][0], "the first leader is the preferred replica"
    old = next(n for n in nodes if n.broker_id == old_id)
    other = next(n for n in nodes if n is not old)
    async with Client(old.api_url) as via_old:
        for cursor_id in CURSOR_IDS:  # the old leader has them in memory
            assert await via_old.fetch_cursor(cursor_id, stream_name, 0) == 10
    old.pause()
    try:
        wait_for(
            lambda: _leader_of(other, partition) not in (old_id, -1),
            FAILOVER_TIMEOUT_S,
            message="a new leader while the old one is stopped",
        )
        async with Client(other.api_url) as client:
            for cursor_id in CURSOR_IDS:
                await _set_until_stored(client, cursor_id, stream_name, 20)
    finally:
        old.resume()
    wait_for(lambda: _in_sync(other, partition), FAILOVER_TIMEOUT_S, message="the old back in sync")
    with node_client(other.api_url) as api:
        api.post(
            f"/v1/streams/{CURSORS_STREAM}/elect-preferred", params={"partition": partition}
        ).raise_for_status()
    wait_for(
        lambda: _leader_of(other, partition) == old_id,
        FAILOVER_TIMEOUT_S,
        message="leadership back on the preferred replica",
    )
    async with Client(old.api_url) as via_old:
        got = [await via_old.fetch_cursor(c, stream_name, 0) for c in CURSOR_IDS]
    assert got == [20] * len(CURSOR_IDS)


def _replica_view(node: Any, partition: int) -> dict[str, Any]:
    with node_client(node.api_url) as api:
        view: dict[str, Any] = api.get(
            f"/v1/streams/{CURSORS_STREAM}/partitions/{partition}"
        ).json()
    return view


@pytest.mark.slow  # make fault; make test keeps the plain kill -9 failover
async def test_cursors_compact_on_every_replica_and_survive_kill9(
    make_node: Any, stream_name: str
) -> None:
    """Many sets of a few cursors: the leader snapshots its live keys and drops the segments
    before them, its followers drop theirs after its log start, and a new leader loads the
    snapshot with every cursor's last value."""
    small = {
        "cursors": CursorsConfig(snapshot_min_records=SNAPSHOT_MIN_RECORDS),
        "log": LogConfig(segment_bytes=2048),
    }
    nodes = [make_node(i, **small) for i in (1, 2, 3)]
    with node_client(nodes[0].api_url) as api:
        create_stream(api, stream_name)
    count = len(_cursor_partitions_after_first_set(nodes[0], stream_name))
    partition = cursors_partition(CURSOR_IDS[0], count)
    ids = [c for c in CURSOR_IDS if cursors_partition(c, count) == partition]
    async with Client(nodes[0].api_url) as client:
        for offset in range(SET_ROUNDS):
            await asyncio.gather(*(client.set_cursor(c, stream_name, 0, offset) for c in ids))
    last = SET_ROUNDS - 1
    wait_for(lambda: _in_sync(nodes[0], partition), 30, message="__cursors fully in sync")
    for node in nodes:
        wait_for(
            lambda node=node: _replica_view(node, partition)["log_start_offset"] > 0,
            30,
            message=f"broker {node.broker_id} dropped the segments before a snapshot",
        )
        view = _replica_view(node, partition)
        kept = view["log_end_offset"] - view["log_start_offset"]
        assert kept < SET_ROUNDS * len(ids) // 2, view
    leader_id = _leader_of(nodes[0], partition)
    leader = next(n for n in nodes if n.broker_id == leader_id)
    survivor = next(n for n in nodes if n is not leader)
    leader.kill()
    wait_for(
        lambda: _leader_of(survivor, partition) not in (leader_id, -1),
        FAILOVER_TIMEOUT_S,
        message="a new leader of the compacted partition",
    )
    async with Client(survivor.api_url) as client:
        got = [await client.fetch_cursor(c, stream_name, 0) for c in ids]
    assert got == [last] * len(ids)


def _cursor_partitions_after_first_set(node: Any, stream: str) -> list[dict[str, Any]]:
    """``__cursors`` exists once a cursor was set."""
    with node_client(node.api_url) as api:
        api.put(
            f"/v1/streams/{stream}/partitions/0/cursors/{CURSOR_IDS[0]}", json={"offset": 0}
        ).raise_for_status()
    return _cursor_partitions(node)
