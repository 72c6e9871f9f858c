"""Partition reassignment on the HA topology under acks=all load.

``tests/fault/test_reassignment.py`` covers the move itself on single NATS and ZooKeeper
servers; here the cluster is the production layout (each node on its own server of a NATS
cluster, a ZooKeeper ensemble, the lake on S3). A partition of an RF=2 stream moves from
[a, b] to [b, c], so its leader leaves: every acknowledged record must end up on both target
replicas once, at its offset, and the publishers' acks must resume quickly (the longest gap
between two acks during the move is reported).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from liftlog.embedded.standalone import Standalone
from spark_log.client import Client
from tests.fault.test_failover import ACKED_PER_ROUND, Load, _describe
from tests.fault.test_reassignment import MOVE_TIMEOUT_S, _check_acked_on, _moved, _reassign_cli
from tests.integration.conftest import create_stream
from tests.support.ha_stack import start_ha_stack
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.fault, pytest.mark.slow]

MAX_ACK_GAP_S = 15.0
"""Generous on purpose (shared CI machines): the point is that acks resume by themselves,
the figure printed is the measurement."""


@pytest.fixture
def ha_cluster(temp_dir: Path) -> Iterator[Standalone]:
    """The HA stack with followers dropped from the ISR after 3 s, as the other fault tests."""
    stack = start_ha_stack(temp_dir / "ha", {"replica_lag_time_max_s": 3.0})
    try:
        yield stack
    finally:
        stack.stop()


def _longest_gap(times: list[float], start: float, end: float) -> float:
    """The longest time without an ack in ``[start, end]``."""
    inside = [start, *sorted(t for t in times if start < t < end), end]
    return max(b - a for a, b in itertools.pairwise(inside))


async def test_leader_leaves_its_partition_under_acks_all_load(ha_cluster, stream_name):
    stack, stream = ha_cluster, stream_name
    with httpx.Client(base_url=stack.node(1).api_url, timeout=30) as api:
        create_stream(api, stream, replication_factor=2)
    before = _describe(stack.node(1), stream)
    a, b = before["replicas"]
    (c,) = {n.broker_id for n in stack.nodes} - {a, b}
    async with Client(stack.servers, ack_timeout_s=2) as client:
        load = Load(client, stream)
        await load.wait_acked(ACKED_PER_ROUND, 60)
        started = time.monotonic()
        out = await asyncio.to_thread(_reassign_cli, stack.node(c).api_url, stream, [b, c])
        assert f"{[a, b]} -> {[b, c]}" in out
        await asyncio.to_thread(
            wait_for,
            lambda: _moved(stack.node(b), stream, [b, c]),
            MOVE_TIMEOUT_S,
            message="moved",
        )
        moved = time.monotonic()
        await load.wait_acked(len(load.acked) + ACKED_PER_ROUND, 60)
        await load.finish()
    after = _describe(stack.node(b), stream)
    assert after["leader"] in (b, c) and sorted(after["isr"]) == sorted([b, c])
    assert after["leader_epoch"] > before["leader_epoch"]
    _check_acked_on([stack.node(b), stack.node(c)], stream, load.acked)
    gap = _longest_gap(load.ack_times, started, moved)
    print(f"move took {moved - started:.1f}s; longest gap between acks: {gap:.2f}s")
    assert gap < MAX_ACK_GAP_S
