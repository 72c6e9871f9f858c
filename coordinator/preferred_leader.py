"""Preferred-leader election and the leader-imbalance check, as pure functions.

Kafka's ``PreferredReplicaPartitionLeaderElectionStrategy`` and
``checkAndTriggerAutoLeaderRebalance``: the first replica of ``replicas`` is the preferred
leader. After failovers, leadership piles up on the brokers that stayed up; moving it back to
the preferred replica spreads the write load as the assignment intended.

The preferred replica takes over only if it is live, in the ISR and not shutting down: an ISR
member holds every record acknowledged with ``acks=all`` (the HW is the minimum LEO of the
ISR), so the hand-over loses nothing acknowledged. The ISR is kept as it is (the old leader
stays in sync and becomes a follower) and the leader epoch goes up by one, so the old leader
re-enters its role and the followers truncate by epoch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet

from coordinator.znodes import PartitionState


def preferred_replica(state: PartitionState) -> int:
    """The first replica in assignment order."""
    return state.replicas[0]


def why_not_preferred(
    state: PartitionState,
    live: AbstractSet[int],
    *,
    shutting_down: AbstractSet[int] = frozenset(),
) -> str | None:
    """Why the preferred replica cannot take over now (None: it can, or it already leads).

    The reasons are part of the REST answer, so an operator sees what to wait for.
    """
    preferred = preferred_replica(state)
    if state.leader == preferred:
        return None
    if preferred not in live:
        return f"preferred replica {preferred} is not live"
    if preferred in shutting_down:
        return f"preferred replica {preferred} is shutting down"
    if preferred not in state.isr:
        return f"preferred replica {preferred} is not in the ISR {list(state.isr)} yet"
    return None


def elect_preferred(
    state: PartitionState,
    live: AbstractSet[int],
    *,
    shutting_down: AbstractSet[int] = frozenset(),
) -> PartitionState | None:
    """The preferred replica leads (epoch + 1, ISR kept), or None when it already leads or
    is not eligible (see ``why_not_preferred``)."""
    preferred = preferred_replica(state)
    if state.leader == preferred:
        return None
    if why_not_preferred(state, live, shutting_down=shutting_down) is not None:
        return None
    return dataclasses.replace(state, leader=preferred, leader_epoch=state.leader_epoch + 1)


def imbalance_ratios(states: Iterable[PartitionState]) -> dict[int, float]:
    """Per preferred broker: the share of the partitions it should lead that it does not.

    Kafka's "leader imbalance ratio": for broker B, the partitions whose preferred replica is
    B and whose leader is another broker (or none), over the partitions whose preferred replica
    is B.
    """
    preferred_of: dict[int, int] = {}
    not_led: dict[int, int] = {}
    for state in states:
        broker = preferred_replica(state)
        preferred_of[broker] = preferred_of.get(broker, 0) + 1
        if state.leader != broker:
            not_led[broker] = not_led.get(broker, 0) + 1
    return {broker: not_led.get(broker, 0) / total for broker, total in preferred_of.items()}


def brokers_over_imbalance(ratios: Mapping[int, float], percentage: float) -> frozenset[int]:
    """The brokers whose imbalance exceeds ``percentage`` (Kafka's
    ``leader.imbalance.per.broker.percentage``); their partitions get a preferred election."""
    return frozenset(b for b, ratio in ratios.items() if ratio * 100.0 > percentage)


@dataclasses.dataclass(frozen=True)
class PreferredOutcome:
    """One partition after a preferred-leader election: its state, whether this election
    moved the leadership, and why not when the preferred replica could not take over."""

    partition: int
    state: PartitionState
    elected: bool
    reason: str | None
