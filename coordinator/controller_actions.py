"""Apply a leader rule to partition states in ZooKeeper: read, decide, fenced write, retry.

The blocking half of the controller (it runs these in a worker thread). A rule is a pure
function of a state (``coordinator.leader_selection`` bound to the live brokers); this module
reads each state with its version, asks the rule, and writes the answer with the controller's
fenced transaction. A state that moved in between (a leader changed its ISR) is read again and
decided again, a bounded number of times; a deposed controller stops at the first write.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from coordinator.controller_election import ControllerFence
from coordinator.errors import VersionConflictError, ZNodeNotFoundError
from coordinator.fencing import refuse_newer_controller_state, write_partition_state_fenced
from coordinator.isr import read_partition_state
from coordinator.streams import StreamStore
from coordinator.zk import ZkSession
from coordinator.znodes import STREAMS_PATH, PartitionState
from spark_log.errors import PartitionNotFoundError, StreamNotFoundError

STATE_WRITE_MAX_ATTEMPTS = 5

Rule = Callable[[PartitionState], PartitionState | None]
PartitionKey = tuple[str, int]


@dataclass(frozen=True)
class PartitionChange:
    """One state the controller wrote: what it was and what it became."""

    stream: str
    partition: int
    before: PartitionState
    after: PartitionState


@dataclass(frozen=True)
class ScanResult:
    """What a pass over every partition did, and every partition's state after it.

    ``incomplete``: some partition kept changing under the controller (it was skipped after
    ``STATE_WRITE_MAX_ATTEMPTS``); the caller scans again.
    """

    changes: tuple[PartitionChange, ...]
    states: dict[PartitionKey, PartitionState]
    incomplete: bool

    @property
    def offline(self) -> list[PartitionKey]:
        """Partitions nobody can serve (no leader, or nobody in sync)."""
        return [key for key, state in self.states.items() if state.offline]


def apply_everywhere(session: ZkSession, fence: ControllerFence, rule: Rule) -> ScanResult:
    """Apply ``rule`` to every partition of every stream; streams deleted meanwhile are skipped.

    ControllerMovedError ends the pass at once: nothing more may be written.
    """
    changes: list[PartitionChange] = []
    states: dict[PartitionKey, PartitionState] = {}
    incomplete = False
    store = StreamStore(session)
    for stream in _stream_names(session):
        try:
            current = store.partition_states(stream)
        except StreamNotFoundError:
            continue
        for partition, (state, version) in current.items():
            try:
                change, final = apply_to_partition(
                    session, fence, stream, partition, rule, (state, version)
                )
            except (StreamNotFoundError, PartitionNotFoundError):
                break  # the stream was deleted during the pass
            except VersionConflictError:
                incomplete = True
                continue
            states[(stream, partition)] = final
            if change is not None:
                changes.append(change)
    return ScanResult(tuple(changes), states, incomplete)


def apply_to_partition(
    session: ZkSession,
    fence: ControllerFence,
    stream: str,
    partition: int,
    rule: Rule,
    current: tuple[PartitionState, int] | None = None,
) -> tuple[PartitionChange | None, PartitionState]:
    """Apply ``rule`` to one partition: (the change written or None, the state now).

    ``current`` is the state and version already read, if any. Errors the rule raises (an
    ineligible unclean choice) propagate; VersionConflictError after
    ``STATE_WRITE_MAX_ATTEMPTS`` lost writes.
    """
    state, version = current or read_partition_state(session, stream, partition)
    for _attempt in range(STATE_WRITE_MAX_ATTEMPTS):
        refuse_newer_controller_state(fence, stream, partition, state)
        decided = rule(state)
        if decided is None:
            return None, state
        try:
            written, _new_version = write_partition_state_fenced(
                session, fence, stream, partition, decided, version
            )
        except VersionConflictError:
            state, version = read_partition_state(session, stream, partition)
            continue
        return PartitionChange(stream, partition, state, written), written
    raise VersionConflictError(
        f"partition {stream}/{partition} changed under every one of "
        f"{STATE_WRITE_MAX_ATTEMPTS} attempts; will scan again"
    )


def _stream_names(session: ZkSession) -> list[str]:
    try:
        return session.children(STREAMS_PATH)
    except ZNodeNotFoundError:
        return []
