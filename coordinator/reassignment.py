"""Partition reassignment as a pure state machine (Kafka's KIP-455 protocol, step by step).

The controller calls ``next_step`` with the partition's current state each time something
may have moved (a partition state, the live brokers, a new reassignment, a controller
failover). Each step is decided from the state alone, so a new controller resumes where the
old one stopped by reading the reassignment znode and the state:

1. replicas = original + the new target brokers (union): the new ones start fetching;
2. wait until every target replica is in the ISR (the leader expands it once caught up);
3. if the leader is not a target, elect the first target replica that is in the ISR, live and
   not shutting down (an ISR member holds every acknowledged record);
4. replicas = target, ISR = ISR ∩ target: removed brokers stop and delete their replica;
5. done: the controller deletes the reassignment znode.

Every write raises the leader epoch, so the leader re-enters its role with the new replica set
(its follower tracking and the fetch check that refuses non-replicas follow the assignment),
and a removed replica's fetches are fenced.

A cancelled reassignment (KIP-455's cancel) goes back instead, through ``cancel_step``:

1. if the leader is not an original replica in the ISR (it is one being added), elect the
   first original replica that is in the ISR, live and not shutting down;
2. replicas = original, ISR = ISR ∩ original: the added brokers stop and delete their replica;
   the replicas a move would have removed were never dropped, so nothing is copied back;
3. done: the controller deletes the reassignment znode.

A cancel that comes after the move completed (the target assignment written, the znode not yet
deleted) has nothing left to revert: the move stands, as in Kafka.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import TypedDict, Unpack

from coordinator.znodes import PartitionState


class Phase(enum.Enum):
    """Where a reassignment stands (the GET progress answer shows ``value``)."""

    ADDING = "adding_replicas"
    CATCHING_UP = "catching_up"
    MOVING_LEADER = "moving_leader"
    REMOVING = "removing_replicas"
    CANCELLING = "cancelling"
    DONE = "done"


def phase(state: PartitionState, target: Sequence[int]) -> Phase:
    """The step the partition is at for this target."""
    if not set(target) <= set(state.replicas):
        return Phase.ADDING
    if not set(target) <= set(state.isr):
        return Phase.CATCHING_UP
    if state.leader not in target:
        return Phase.MOVING_LEADER
    if tuple(state.replicas) != tuple(target):
        return Phase.REMOVING
    return Phase.DONE


def next_step(
    state: PartitionState,
    target: Sequence[int],
    live: AbstractSet[int],
    *,
    shutting_down: AbstractSet[int] = frozenset(),
) -> PartitionState | None:
    """The state to write next, or None (waiting for catch-up or a leader, or done)."""
    current = phase(state, target)
    if current is Phase.ADDING:
        added = tuple(b for b in target if b not in state.replicas)
        return _bumped(state, replicas=tuple(state.replicas) + added)
    if current is Phase.MOVING_LEADER:
        eligible = live - shutting_down
        leader = next((b for b in target if b in state.isr and b in eligible), None)
        return None if leader is None else _bumped(state, leader=leader)
    if current is Phase.REMOVING:
        isr = tuple(b for b in state.isr if b in target)
        return _bumped(state, replicas=tuple(target), isr=isr)
    return None


def cancel_phase(state: PartitionState, original: Sequence[int], target: Sequence[int]) -> Phase:
    """CANCELLING until the partition is back on ``original`` (or the move already completed,
    which a cancel no longer reverts), then DONE."""
    if phase(state, target) is Phase.DONE or tuple(state.replicas) == tuple(original):
        return Phase.DONE
    return Phase.CANCELLING


def cancel_step(
    state: PartitionState,
    original: Sequence[int],
    target: Sequence[int],
    live: AbstractSet[int],
    *,
    shutting_down: AbstractSet[int] = frozenset(),
) -> PartitionState | None:
    """The state to write next to revert a cancelled reassignment, or None (done, or waiting
    for an original replica in the ISR to lead)."""
    if cancel_phase(state, original, target) is Phase.DONE:
        return None
    if state.leader not in original or state.leader not in state.isr:
        eligible = live - shutting_down
        leader = next((b for b in original if b in state.isr and b in eligible), None)
        return None if leader is None else _bumped(state, leader=leader)
    isr = tuple(b for b in state.isr if b in original)
    return _bumped(state, replicas=tuple(original), isr=isr)


class _StateChanges(TypedDict, total=False):
    """What a reassignment step changes in a partition's state."""

    leader: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]


def _bumped(state: PartitionState, **changes: Unpack[_StateChanges]) -> PartitionState:
    return dataclasses.replace(state, leader_epoch=state.leader_epoch + 1, **changes)
