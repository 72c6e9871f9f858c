"""``POST /v1/cluster/decommission``: generate and submit the reassignments that move every
replica off a broker (then it holds nothing and can be stopped for good).

The plan comes from ``coordinator.reassignment_plan`` over the live brokers; each stream's
part is submitted as one reassignment (``ingest.admin.reassign``), which the controller carries out
like any other, so the usual guarantees hold: new replicas join the ISR before the retired
broker's replicas are dropped and deleted.
"""

from __future__ import annotations

import asyncio

from coordinator import reassignment_plan, reassignment_store
from coordinator.znodes import PartitionState
from ingest.admin.node_view import NodeView
from spark_log.api_models import DecommissionPlan, PartitionMove
from spark_log.errors import StreamNotFoundError


async def decommission(node: NodeView, broker_id: int, dry_run: bool) -> DecommissionPlan:
    states = await asyncio.to_thread(_all_states, node)
    live = [b.broker_id for b in await node.live_brokers()]
    plan = reassignment_plan.decommission_plan(states, broker_id, live)
    moves = tuple(
        PartitionMove(stream, p, tuple(states[stream][p].replicas), tuple(target))
        for stream, partitions in plan.items()
        for p, target in partitions.items()
    )
    if not dry_run:
        for stream, partitions in plan.items():
            await asyncio.to_thread(reassignment_store.submit, node.zk, stream, partitions)
    return DecommissionPlan(broker_id, not dry_run, moves)


def _all_states(node: NodeView) -> dict[str, dict[int, PartitionState]]:
    states: dict[str, dict[int, PartitionState]] = {}
    for record in node.store.list():
        try:
            current = node.store.partition_states(record.name)
        except StreamNotFoundError:
            continue  # deleted meanwhile
        states[record.name] = {p: state for p, (state, _v) in current.items()}
    return states
