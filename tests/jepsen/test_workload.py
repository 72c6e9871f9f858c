"""The whole Jepsen loop on a healthy real cluster: publish, stop, drain, check, all clean.

No fault is injected, so anything the checker finds is a bug either in the system or in the
harness; this is the baseline every fault scenario's verdict is read against.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from liftlog.embedded.ports import free_port, free_port_block
from liftlog.embedded.standalone import Standalone
from spark_log.client import Client
from tests.support.jepsen.checker import check
from tests.support.jepsen.drain import drain
from tests.support.jepsen.history import ACKS_ALL, ACKS_LEADER, ACKS_NONE, OK
from tests.support.jepsen.quiescence import wait_quiescent
from tests.support.jepsen.replicas import by_partition
from tests.support.jepsen.workload import Workload, default_mix
from tests.support.waiting import wait_for

NODES = 3
PARTITIONS = 2
PUBLISHERS = 12  # every (acks, single/batch, msg id) combination once
ACKED_RECORDS = 300
LOAD_TIMEOUT_S = 30.0
MAX_HEALTHY_UNAVAILABLE_S = 5.0


@pytest.fixture
def stack(temp_dir: Path) -> Iterator[Standalone]:
    """Three nodes on their own NATS and ZooKeeper (non-HA), stopped whatever the test does."""
    stack = Standalone(
        nodes=NODES,
        data_dir=temp_dir / "stack",
        nats_port=free_port(),
        zk_port=free_port(),
        api_port=free_port_block(NODES),
        liftbridge_port=free_port_block(NODES),
    )
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


def _fully_replicated(api_url: str, stream: str) -> bool:
    """Every partition has a leader and all replicas in its ISR."""
    body = httpx.get(f"{api_url}/v1/streams/{stream}", timeout=5).json()
    return all(len(p["isr"]) == NODES and p["leader"] > 0 for p in body["partitions"])


async def _create_replicated_stream(stack: Standalone, stream: str) -> None:
    """An RF=3, min ISR 2 stream (the safe configuration), waited for full ISRs."""
    async with Client(stack.servers) as admin:
        await admin.create_stream(
            stream, f"{stream}.in", partitions=PARTITIONS, replication_factor=NODES, min_isr=2
        )
    api_url = stack.nodes[0].api_url
    await asyncio.to_thread(
        wait_for, lambda: _fully_replicated(api_url, stream), 30, message="full ISRs"
    )


async def test_a_healthy_cluster_loses_and_duplicates_nothing(stack: Standalone) -> None:
    stream = f"jepsen-{uuid.uuid4().hex[:8]}"
    await _create_replicated_stream(stack, stream)

    workload = Workload(stack.servers, stream, default_mix(stack.nats.url, PUBLISHERS)).start()
    try:
        await workload.wait_acked(ACKED_RECORDS, LOAD_TIMEOUT_S)
    finally:
        history = await workload.stop()
    api_urls = {n.broker_id: n.api_url for n in stack.nodes}
    await asyncio.to_thread(wait_quiescent, api_urls, stream)
    stack.stop()  # a clean close writes each replica's HW checkpoint
    replicas = drain([(n.broker_id, Path(n.config.data_dir)) for n in stack.nodes], stream)

    result = check(history, replicas)

    assert result.valid, result.summary()
    assert {b: sorted(parts) for b, parts in replicas.items()} == {1: [0, 1], 2: [0, 1], 3: [0, 1]}
    print(result.summary())
    assert result.acknowledged > 0  # acks=all records (the must-survive class)
    assert sum(result.acknowledged_by_acks.values()) >= ACKED_RECORDS
    assert set(result.acknowledged_by_acks) == {ACKS_ALL, ACKS_LEADER}
    sent = {a.acks for a in history.attempts if a.outcome == OK}
    assert sent == {ACKS_ALL, ACKS_LEADER, ACKS_NONE}
    assert {n: a.count for n, a in result.anomalies.items() if a.count} == {}, result.summary()
    assert result.lost_by_acks == {}
    assert result.seconds_unavailable < MAX_HEALTHY_UNAVAILABLE_S, result.summary()
    for states in by_partition(replicas).values():  # quiescent, then closed cleanly
        assert len({(s.log_end_offset, s.high_watermark) for s in states}) == 1
        assert states[0].high_watermark == states[0].log_end_offset > 0
