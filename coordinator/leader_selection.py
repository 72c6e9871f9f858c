"""Leader selection: Kafka's classic controller rules as pure functions of (state, live brokers).

Pure so that every rule is unit-tested without ZooKeeper, and so the controller's only job is
to read states, call these and write the results with its fenced transaction. Each function
returns the new ``PartitionState``, or None when the partition needs no change; the
``controller_epoch`` of a new state is left as it was (the caller stamps its own).

The one invariant every rule keeps (the Jepsen lesson): a leader is only ever chosen from the
ISR, except by ``elect_unclean``, which only an explicit admin action calls. Candidates are
tried in ``replicas`` order, so the preferred replica leads again whenever it can.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Set as AbstractSet

from coordinator.errors import ElectionNotNeededError, IneligibleReplicaError
from coordinator.znodes import NO_LEADER, PartitionState


def elect_on_broker_failure(state: PartitionState, live: AbstractSet[int]) -> PartitionState | None:
    """Apply "these brokers are live" to one partition (the controller's broker-change rule).

    - Leader not live: the first live ISR member in ``replicas`` order leads, the ISR shrinks
      to its live members, ``leader_epoch`` + 1. With no live ISR member the partition goes
      offline: leader ``NO_LEADER``, ``leader_epoch`` + 1, and the ISR is kept as it was so a
      returning member (which holds every acknowledged record) can lead again.
    - Leader live, some ISR followers not: the ISR shrinks to its live members, leader epoch
      unchanged (the leader stays, only its follower set changed).
    - Already offline: ``elect_offline`` (an ISR member may be back), so an offline partition
      is never bumped again and again by later broker changes.
    """
    if state.leader == NO_LEADER:
        return elect_offline(state, live)
    if state.leader not in live:
        return _replace_failed_leader(state, live)
    return _shrink_to_live(state, live)


def elect_offline(state: PartitionState, live: AbstractSet[int]) -> PartitionState | None:
    """An offline partition whose ISR member is live again gets it as leader (epoch + 1).

    The ISR shrinks to its live members: the others are still down and must catch up from the
    new leader before they count as in sync again. None if the partition is not offline or no
    ISR member is live (it stays offline: unclean election is not automatic).
    """
    if state.leader != NO_LEADER:
        return None
    candidate = _first_live_isr_member(state, live)
    if candidate is None:
        return None
    return _new_leader(state, candidate, _live_isr(state, live))


def elect_for_controlled_shutdown(
    state: PartitionState, shutting_down: int, live: AbstractSet[int]
) -> PartitionState | None:
    """Move a partition off a broker that is shutting down cleanly.

    - It leads: the first other live ISR member (``replicas`` order) leads, the broker leaves
      the ISR, ``leader_epoch`` + 1. With no other live ISR member nothing changes (None): it
      keeps leading, since taking leadership away would make the partition offline for
      nothing; the caller counts such partitions and reports them.
    - It is a follower in the ISR: it leaves the ISR (leader epoch unchanged), so acks=all no
      longer waits for a broker about to stop.
    - Otherwise (not in the ISR, or the partition is offline) nothing changes: an offline
      partition's ISR is the record of who can lead it again and is never trimmed here.
    """
    if state.leader == NO_LEADER or shutting_down not in state.isr:
        return None
    isr = tuple(broker for broker in state.isr if broker != shutting_down)
    if state.leader != shutting_down:
        return dataclasses.replace(state, isr=isr)
    candidate = _first_live_isr_member(state, live - {shutting_down})
    if candidate is None:
        return None
    return _new_leader(state, candidate, isr)


def elect_unclean(
    state: PartitionState, live: AbstractSet[int], broker_id: int | None = None
) -> PartitionState:
    """Make a live out-of-sync replica the leader: an explicit admin action, never automatic.

    ``broker_id`` must be a live replica (IneligibleReplicaError otherwise); without it the
    first live replica in ``replicas`` order is chosen. The ISR becomes just the new leader and
    ``leader_epoch`` + 1. Records the old ISR acknowledged beyond the new leader's log end are
    lost, so this is refused (ElectionNotNeededError) while a clean choice exists: a live
    leader, or a live ISR member the controller elects by itself.
    """
    _require_no_clean_choice(state, live)
    live_replicas = [broker for broker in state.replicas if broker in live]
    if broker_id is None:
        if not live_replicas:
            raise IneligibleReplicaError(
                f"no replica of {list(state.replicas)} is live: nobody can lead the partition"
            )
        chosen = live_replicas[0]
    elif broker_id not in live_replicas:
        why = "is not live" if broker_id in state.replicas else "is not a replica"
        raise IneligibleReplicaError(f"broker {broker_id} {why}; live replicas: {live_replicas}")
    else:
        chosen = broker_id
    return _new_leader(state, chosen, (chosen,))


def _require_no_clean_choice(state: PartitionState, live: AbstractSet[int]) -> None:
    if state.leader != NO_LEADER and state.leader in live:
        raise ElectionNotNeededError(
            f"broker {state.leader} leads the partition and is live: no election needed"
        )
    clean = _first_live_isr_member(state, live)
    if clean is not None:
        raise ElectionNotNeededError(
            f"in-sync replica {clean} is live: the controller elects it without losing data"
        )


def _replace_failed_leader(state: PartitionState, live: AbstractSet[int]) -> PartitionState:
    candidate = _first_live_isr_member(state, live)
    if candidate is None:
        return dataclasses.replace(state, leader=NO_LEADER, leader_epoch=state.leader_epoch + 1)
    return _new_leader(state, candidate, _live_isr(state, live))


def _shrink_to_live(state: PartitionState, live: AbstractSet[int]) -> PartitionState | None:
    isr = _live_isr(state, live)
    return None if isr == state.isr else dataclasses.replace(state, isr=isr)


def _new_leader(state: PartitionState, leader: int, isr: tuple[int, ...]) -> PartitionState:
    return dataclasses.replace(state, leader=leader, leader_epoch=state.leader_epoch + 1, isr=isr)


def _first_live_isr_member(state: PartitionState, live: AbstractSet[int]) -> int | None:
    """The first replica (preferred order) that is both in sync and live."""
    return next((b for b in state.replicas if b in state.isr and b in live), None)


def _live_isr(state: PartitionState, live: AbstractSet[int]) -> tuple[int, ...]:
    return tuple(broker for broker in state.isr if broker in live)
