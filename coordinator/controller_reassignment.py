"""The controller's half of partition reassignment: advance every pending one (blocking).

Run in a worker thread whenever something may have moved: a partition state (a new replica
joined the ISR), the live brokers, the reassignment znodes, or a controller failover (the new
controller's first full scan). Each partition goes as far as it can now through
``coordinator.reassignment.next_step``, every write fenced by the controller epoch; a finished
one's znode is deleted, so a failover resumes exactly the unfinished ones.
"""

from __future__ import annotations

import logging
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from coordinator import reassignment, reassignment_store
from coordinator.controller_actions import PartitionChange, apply_to_partition
from coordinator.controller_election import ControllerFence
from coordinator.errors import VersionConflictError
from coordinator.zk import ZkSession
from coordinator.znodes import PartitionReassignment, PartitionState
from spark_log.errors import PartitionNotFoundError, StreamNotFoundError

log = logging.getLogger("liftlog.controller")

# Steps one pass may take for one partition: add, move the leader, shrink (catch-up waits).
MAX_STEPS_PER_PASS = 4


@dataclass(frozen=True)
class ReassignmentPass:
    """What one pass wrote, and which reassignments it finished."""

    changes: tuple[PartitionChange, ...]
    finished: tuple[PartitionReassignment, ...]
    retry: bool


def advance_all(
    session: ZkSession,
    fence: ControllerFence,
    live: AbstractSet[int],
    shutting_down: AbstractSet[int],
) -> ReassignmentPass:
    """Advance every pending reassignment as far as it can go now."""
    changes: list[PartitionChange] = []
    finished: list[PartitionReassignment] = []
    retry = False
    for item in reassignment_store.pending(session):
        try:
            done = _advance(session, fence, item, live, shutting_down, changes)
        except (StreamNotFoundError, PartitionNotFoundError):
            log.info(
                "reassignment of %s/%d dropped: the stream is gone", item.stream, item.partition
            )
            done = True
        except VersionConflictError:
            retry = True  # the state kept moving; the next pass continues
            continue
        if done:
            reassignment_store.finish(session, fence, item)
            finished.append(item)
    return ReassignmentPass(tuple(changes), tuple(finished), retry)


def _advance(
    session: ZkSession,
    fence: ControllerFence,
    item: PartitionReassignment,
    live: AbstractSet[int],
    shutting_down: AbstractSet[int],
    changes: list[PartitionChange],
) -> bool:
    """Take the steps possible now; True when the partition has the target assignment."""

    def rule(state: PartitionState) -> PartitionState | None:
        return reassignment.next_step(
            state, item.target_replicas, live, shutting_down=shutting_down
        )

    for _step in range(MAX_STEPS_PER_PASS):
        change, state = apply_to_partition(session, fence, item.stream, item.partition, rule)
        if change is not None:
            changes.append(change)
        if reassignment.phase(state, item.target_replicas) is reassignment.Phase.DONE:
            return True
        if change is None:
            return False
    return False
