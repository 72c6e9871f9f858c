"""The controller's half of partition reassignment: advance every pending one (blocking).

Run in a worker thread whenever something may have moved: a partition state (a new replica
joined the ISR), the live brokers, the reassignment znodes, or a controller failover (the new
controller's first full scan). Each partition goes as far as it can now through
``coordinator.reassignment.next_step``, every write fenced by the controller epoch; a finished
one's znode is deleted, so a failover resumes exactly the unfinished ones. A cancelled one
(``cancelling`` in its znode) is taken back to its original replicas the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from coordinator import reassignment, reassignment_store
from coordinator.controller_actions import PartitionChange, Rule, apply_to_partition
from coordinator.controller_election import ControllerFence
from coordinator.errors import VersionConflictError
from coordinator.zk import ZkSession
from coordinator.znodes import PartitionReassignment, PartitionState
from spark_log.errors import PartitionNotFoundError, StreamNotFoundError

log = logging.getLogger("liftlog.controller")

# Steps one pass may take for one partition: add, move the leader, shrink (catch-up waits);
# a cancel takes at most two (move the leader back, restore the original replicas).
MAX_STEPS_PER_PASS = 4


@dataclass(frozen=True)
class Finished:
    """A reassignment whose znode the pass deleted, and the replicas the partition ended with
    (the target, or the original ones for a cancel; empty when the stream was deleted)."""

    item: PartitionReassignment
    replicas: tuple[int, ...]


@dataclass(frozen=True)
class ReassignmentPass:
    """What one pass wrote, and which reassignments it finished."""

    changes: tuple[PartitionChange, ...]
    finished: tuple[Finished, ...]
    retry: bool


def advance_all(
    session: ZkSession,
    fence: ControllerFence,
    live: AbstractSet[int],
    shutting_down: AbstractSet[int],
) -> ReassignmentPass:
    """Advance every pending reassignment as far as it can go now."""
    changes: list[PartitionChange] = []
    finished: list[Finished] = []
    retry = False
    for item in reassignment_store.pending(session):
        try:
            final = _advance(session, fence, item, live, shutting_down, changes)
        except (StreamNotFoundError, PartitionNotFoundError):
            log.info(
                "reassignment of %s/%d dropped: the stream is gone", item.stream, item.partition
            )
            final = ()
        except VersionConflictError:
            retry = True  # the state kept moving; the next pass continues
            continue
        if final is not None:
            reassignment_store.finish(session, fence, item)
            finished.append(Finished(item, final))
    return ReassignmentPass(tuple(changes), tuple(finished), retry)


def _advance(
    session: ZkSession,
    fence: ControllerFence,
    item: PartitionReassignment,
    live: AbstractSet[int],
    shutting_down: AbstractSet[int],
    changes: list[PartitionChange],
) -> tuple[int, ...] | None:
    """Take the steps possible now; the replicas once there is nothing left to do (the
    partition has the target assignment or, for a cancelled one, its original assignment
    again), else None."""
    rule, finished = _rule_for(item, live, shutting_down)
    for _step in range(MAX_STEPS_PER_PASS):
        change, state = apply_to_partition(session, fence, item.stream, item.partition, rule)
        if change is not None:
            changes.append(change)
        if finished(state):
            return tuple(state.replicas)
        if change is None:
            return None
    return None


def _rule_for(
    item: PartitionReassignment, live: AbstractSet[int], shutting_down: AbstractSet[int]
) -> tuple[Rule, Callable[[PartitionState], bool]]:
    """The forward steps towards the target, or the way back for a cancelled reassignment
    (decided from the znode each pass, so a failover mid-cancel carries on going back)."""
    original, target = item.original_replicas, item.target_replicas
    if item.cancelling:

        def back(state: PartitionState) -> PartitionState | None:
            return reassignment.cancel_step(
                state, original, target, live, shutting_down=shutting_down
            )

        def reverted(state: PartitionState) -> bool:
            return reassignment.cancel_phase(state, original, target) is reassignment.Phase.DONE

        return back, reverted

    def forward(state: PartitionState) -> PartitionState | None:
        return reassignment.next_step(state, target, live, shutting_down=shutting_down)

    def moved(state: PartitionState) -> bool:
        return reassignment.phase(state, target) is reassignment.Phase.DONE

    return forward, moved
