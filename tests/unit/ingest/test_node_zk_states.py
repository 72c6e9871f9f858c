"""How a node's leaderships follow its ZooKeeper connection (no ZooKeeper needed: the session
is never started, the replicas are a recorder, the states are fed as kazoo's thread would).

Suspended (an ensemble electing a leader, or without quorum): nothing is fenced. Lost: fenced
until the broker has registered on a new session, and a reconnect while re-registering does
not lift the fence early.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ingest.node import IngestNode
from spark_log.config import NodeConfig
from tests.support.waiting import one_loop_turn

SESSION_TIMEOUT_S = 0.2


class FenceRecorder:
    """Stands in for the ReplicaManager: records each fence_leaders call."""

    def __init__(self) -> None:
        self.calls: list[str | None] = []

    def fence_leaders(self, reason: str | None) -> None:
        self.calls.append(reason)


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[tuple[IngestNode, FenceRecorder]]:
    config = NodeConfig(
        broker_id=1,
        data_dir=str(tmp_path),
        zk_connect="127.0.0.1:1",  # never connected
        zk_session_timeout_s=SESSION_TIMEOUT_S,
    )
    node = IngestNode(config)
    fences = FenceRecorder()
    node.replicas = fences  # type: ignore[assignment]
    node._loop = asyncio.get_running_loop()
    try:
        yield node, fences
    finally:
        node._stopping.set()
        for task in list(node._background):
            task.cancel()
        await asyncio.gather(*node._background, return_exceptions=True)


async def test_a_suspension_fences_nothing(node):
    ingest_node, fences = node
    ingest_node._zk_state_changed("suspended")
    assert fences.calls == []
    ingest_node._zk_state_changed("connected")
    assert fences.calls == [None], "only the reconnect's unfence"


async def test_a_reconnect_while_re_registering_keeps_the_fence(node):
    ingest_node, fences = node
    ingest_node._zk_state_changed("lost")
    ingest_node._zk_state_changed("connected")  # re-registering starts (and keeps failing)
    ingest_node._zk_state_changed("suspended")
    ingest_node._zk_state_changed("connected")
    await one_loop_turn()
    assert fences.calls == ["ZooKeeper session lost"], "no unfence before registering"
    assert ingest_node._session_lost
    running = [t for t in ingest_node._background if not t.done()]
    assert len(running) == 1, "one re-registration at a time"
