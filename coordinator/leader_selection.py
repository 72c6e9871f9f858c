"""Leader selection: Kafka's classic controller rules as pure functions of (state, live brokers).

Pure so that every rule is unit-tested without ZooKeeper, and so the controller's only job is
to read states, call these and write the results with its fenced transaction. Each function
returns the new ``PartitionState``, or None when the partition needs no change; the
``controller_epoch`` of a new state is left as it was (the caller stamps its own).

The one invariant every rule keeps (the Jepsen lesson): a leader is only ever chosen from the
ISR, except by ``elect_unclean``, which only an explicit admin action calls. Candidates are
tried in ``replicas`` order, so the preferred replica leads again whenever it can, and a live
broker that is shutting down is never a candidate (Kafka's ``shuttingDownBrokerIds``): it would
only have to hand the leadership on again, or take it with it when it stops.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Set as AbstractSet

from coordinator.errors import ElectionNotNeededError, IneligibleReplicaError
from coordinator.znodes import NO_LEADER, PartitionState


def elect_on_broker_failure(
    state: PartitionState,
    live: AbstractSet[int],
    *,
    shutting_down: AbstractSet[int] = frozenset(),
) -> PartitionState | None:
    """Apply "these brokers are live" to one partition (the controller's broker-change rule).

    - Leader not live: the first live ISR member in ``replicas`` order that is not
      ``shutting_down`` leads, the ISR shrinks to its live members, ``leader_epoch`` + 1.
      With no such member the partition goes offline: leader ``NO_LEADER``, ``leader_epoch``
      + 1, and the ISR is kept as it was so a returning member (which holds every
      acknowledged record) can lead again.
    - Leader live, some ISR followers not: the ISR shrinks to its live members, leader epoch
      unchanged (the leader stays, only its follower set changed).
    - Already offline: ``elect_offline`` (an ISR member may be back), so an offline partition
      is never bumped again and again by later broker changes.
    """
    if state.leader == NO_LEADER:
        return elect_offline(state, live, shutting_down=shutting_down)
    if state.leader not in live:
        return _replace_failed_leader(state, live, live - shutting_down)
    return _shrink_to_live(state, live)


def elect_offline(
    state: PartitionState,
    live: AbstractSet[int],
    *,
    shutting_down: AbstractSet[int] = frozenset(),
) -> PartitionState | None:
    """An offline partition whose ISR member is live again gets it as leader (epoch + 1).

    The ISR shrinks to its live members: the others are still down and must catch up from the
    new leader before they count as in sync again. None if the partition is not offline or no
    ISR member is live and not ``shutting_down`` (it stays offline: unclean election is not
    automatic).
    """
    if state.leader != NO_LEADER:
        return None
    candidate = _first_live_isr_member(state, live - shutting_down)
    if candidate is None:
        return None
    return _new_leader(state, candidate, _live_isr(state, live))


def elect_for_controlled_shutdown(
    state: PartitionState,
    broker_id: int,
    live: AbstractSet[int],
    *,
    shutting_down: AbstractSet[int] = frozenset(),
) -> PartitionState | None:
    """Move a partition off ``broker_id``, which is shutting down cleanly.

    - It leads: the first other live ISR member (``replicas`` order) that is not itself
      ``shutting_down`` leads, the broker leaves the ISR, ``leader_epoch`` + 1. With no such
      member nothing changes (None): it keeps leading, since taking leadership away would
      make the partition offline for nothing (or hand it to a broker about to stop, which
      would move it again: all nodes stopping at once must not play pass-the-parcel); the
      caller counts such partitions and reports them.
    - It is a follower in the ISR: it leaves the ISR (leader epoch unchanged), so acks=all no
      longer waits for a broker about to stop.
    - Otherwise (not in the ISR, or the partition is offline) nothing changes: an offline
      partition's ISR is the record of who can lead it again and is never trimmed here.
    """
    if state.leader == NO_LEADER or broker_id not in state.isr:
        return None
    isr = tuple(broker for broker in state.isr if broker != broker_id)
    if state.leader != broker_id:
        return dataclasses.replace(state, isr=isr)
    candidate = _first_live_isr_member(state, live - shutting_down - {broker_id})
    if candidate is None:
        return None
    return _new_leader(state, candidate, isr)


def leave_isr_after_data_loss(state: PartitionState, broker_id: int) -> PartitionState | None:
    """Take ``broker_id`` out of the ISR: its log lost durable data at recovery (KIP-966's
    unclean-shutdown rule, applied to a replica that knows it is damaged).

    It no longer holds every committed record, so it must not be elected until the leader
    expands it back into the ISR, which takes a fetch at or past the HW: it has caught up.

    - Not in the ISR and not the leader: None, it is not electable already.
    - The only replica: None. No other copy exists to protect or to repair from; it keeps its
      role (the caller reports the loss).
    - Otherwise it leaves the ISR and ``leader_epoch`` + 1; if it led, the leader becomes
      ``NO_LEADER`` so that the controller elects another ISR member (or keeps the partition
      offline, which then needs an explicit unclean election). The new epoch also makes a
      leader re-enter its role and forget every follower's LEO, this replica's pre-crash one
      included, so only a real fetch can bring it back into the ISR.
    """
    if broker_id not in state.isr and state.leader != broker_id:
        return None
    if tuple(state.replicas) == (broker_id,):
        return None
    leader = NO_LEADER if state.leader == broker_id else state.leader
    isr = tuple(broker for broker in state.isr if broker != broker_id)
    return dataclasses.replace(state, leader=leader, leader_epoch=state.leader_epoch + 1, isr=isr)


def lead_again_after_restart(
    state: PartitionState, broker_id: int, led_epoch: int
) -> PartitionState | None:
    """A new leader epoch for a leader that restarted while still named leader (it
    re-registered before its old session's expiry was acted on, so no election happened).

    Its log may have lost an unflushed tail its followers already copied, and the records it
    appends next would take the same offsets in the same epoch: followers could not tell the
    two tails apart by epoch (KIP-101 needs one epoch per leadership incarnation), and an
    old tail would stay below the HW. A new epoch starting at its LEO lets every follower cut
    what this log lost. None when the state no longer names it leader of ``led_epoch``.
    """
    if state.leader != broker_id or state.leader_epoch != led_epoch:
        return None
    return dataclasses.replace(state, leader_epoch=state.leader_epoch + 1)


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


def _replace_failed_leader(
    state: PartitionState, live: AbstractSet[int], eligible: AbstractSet[int]
) -> PartitionState:
    candidate = _first_live_isr_member(state, eligible)
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
