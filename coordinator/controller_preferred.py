"""Preferred-leader elections written to ZooKeeper: on demand, and the automatic rebalance.

The blocking half (the controller runs these in a worker thread). Each write goes through
``controller_actions.apply_to_partition``: read with the znode version, decide with the pure
rule of ``coordinator.preferred_leader``, write in the controller's fenced transaction (a
deposed controller's write fails with ControllerMovedError), re-decide on a version conflict.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet

from coordinator import preferred_leader
from coordinator.controller_actions import (
    PartitionChange,
    ScanResult,
    apply_everywhere,
    apply_to_partition,
)
from coordinator.controller_election import ControllerFence
from coordinator.preferred_leader import PreferredOutcome
from coordinator.streams import StreamStore
from coordinator.zk import ZkSession
from coordinator.znodes import PartitionState
from spark_log.errors import PartitionNotFoundError


def elect_preferred_in_stream(
    session: ZkSession,
    fence: ControllerFence,
    stream: str,
    partition: int | None,
    live: AbstractSet[int],
    shutting_down: AbstractSet[int],
) -> tuple[tuple[PreferredOutcome, ...], tuple[PartitionChange, ...]]:
    """Elect the preferred replica of every partition of ``stream`` (or of ``partition``).

    StreamNotFoundError / PartitionNotFoundError for an unknown target. A partition whose
    preferred replica is not eligible is left as it is, with the reason in its outcome.
    """
    current = StreamStore(session).partition_states(stream)
    if partition is not None and partition not in current:
        raise PartitionNotFoundError(f"stream {stream!r} has no partition {partition}")
    targets = sorted(current) if partition is None else [partition]

    def rule(state: PartitionState) -> PartitionState | None:
        return preferred_leader.elect_preferred(state, live, shutting_down=shutting_down)

    outcomes: list[PreferredOutcome] = []
    changes: list[PartitionChange] = []
    for p in targets:
        change, state = apply_to_partition(session, fence, stream, p, rule, current[p])
        reason = preferred_leader.why_not_preferred(state, live, shutting_down=shutting_down)
        outcomes.append(PreferredOutcome(p, state, change is not None, reason))
        if change is not None:
            changes.append(change)
    return tuple(outcomes), tuple(changes)


def rebalance_leaders(
    session: ZkSession,
    fence: ControllerFence,
    live: AbstractSet[int],
    shutting_down: AbstractSet[int],
    imbalance_percentage: float,
) -> ScanResult:
    """Kafka's auto leader rebalance: for each broker whose leader imbalance exceeds
    ``imbalance_percentage``, elect it on the partitions it prefers and can lead now.

    Reads every state first (a pass that writes nothing), so the ratio covers the cluster.
    """
    seen = apply_everywhere(session, fence, lambda _state: None)
    ratios = preferred_leader.imbalance_ratios(seen.states.values())
    over = preferred_leader.brokers_over_imbalance(ratios, imbalance_percentage)
    if not over:
        return seen

    def rule(state: PartitionState) -> PartitionState | None:
        if preferred_leader.preferred_replica(state) not in over:
            return None
        return preferred_leader.elect_preferred(state, live, shutting_down=shutting_down)

    return apply_everywhere(session, fence, rule)
