"""``/v1/streams/{stream}/reassign``: submit a reassignment plan, see its progress, cancel it.

Any node answers: the plan is written to ZooKeeper (one znode per partition, see
docs/znodes.md) and the controller, which watches those znodes, carries it out (see
docs/replication.md#partition-reassignment).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from coordinator import reassignment, reassignment_store
from coordinator.znodes import PartitionReassignment, PartitionState
from ingest.admin.node_view import NodeView
from spark_log.api_models import ReassignmentProgress, ReassignmentStatus
from spark_log.errors import InvalidRequestError


async def submit(
    node: NodeView, stream: str, targets: Mapping[int, Sequence[int]]
) -> ReassignmentStatus:
    """Record the plan; the answer is the progress right after (``adding_replicas`` mostly)."""
    await asyncio.to_thread(reassignment_store.submit, node.zk, stream, targets)
    return await progress(node, stream)


async def cancel(node: NodeView, stream: str, partition: int | None) -> ReassignmentStatus:
    """Mark the pending reassignment of ``partition`` (all of the stream's when None) as
    cancelling; the answer is the progress right after (phase ``cancelling`` mostly)."""
    await asyncio.to_thread(reassignment_store.cancel, node.zk, stream, partition)
    return await progress(node, stream)


def plan_targets(partitions: Sequence[tuple[int, Sequence[int]]]) -> dict[int, list[int]]:
    """The plan as {partition: replicas}; a partition named twice is an error."""
    targets: dict[int, list[int]] = {}
    for partition, replicas in partitions:
        if partition in targets:
            raise InvalidRequestError(f"partition {partition} appears twice in the plan")
        targets[partition] = list(replicas)
    return targets


async def progress(node: NodeView, stream: str) -> ReassignmentStatus:
    """Every pending reassignment of ``stream`` with its partition's current state."""
    items = await asyncio.to_thread(reassignment_store.pending, node.zk, stream)
    states = await asyncio.to_thread(node.store.partition_states, stream)
    known = [item for item in items if item.partition in states]
    return ReassignmentStatus(
        stream, tuple(_progress(item, states[item.partition][0]) for item in known)
    )


def _progress(item: PartitionReassignment, state: PartitionState) -> ReassignmentProgress:
    return ReassignmentProgress(
        partition=item.partition,
        target_replicas=item.target_replicas,
        original_replicas=item.original_replicas,
        replicas=tuple(state.replicas),
        isr=tuple(state.isr),
        leader=state.leader,
        phase=_phase(item, state).value,
    )


def _phase(item: PartitionReassignment, state: PartitionState) -> reassignment.Phase:
    if item.cancelling:
        return reassignment.cancel_phase(state, item.original_replicas, item.target_replicas)
    return reassignment.phase(state, item.target_replicas)
