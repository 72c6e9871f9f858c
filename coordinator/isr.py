"""The ISR writes made by brokers rather than the controller.

Who writes a partition state when: the controller changes leaders and shrinks the ISR when a
broker dies (``coordinator.fencing``); the leader shrinks and expands its ISR here; and a
replica whose log lost durable data at recovery takes itself out of the ISR here, before it
serves anything. All are conditional on the znode version, so each sees the others' writes as
a conflict instead of overwriting them. A leader's write must take effect in ZooKeeper before
the leader acts on the new ISR (a shrunk ISR lets the HW advance without the follower: it must
be durable first).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from coordinator.errors import InvalidIsrError, VersionConflictError, ZNodeNotFoundError
from coordinator.leader_selection import lead_again_after_restart, leave_isr_after_data_loss
from coordinator.zk import ZkSession
from coordinator.znodes import (
    NO_LEADER,
    PartitionState,
    broker_path,
    partition_state_path,
    stream_path,
)
from spark_log.errors import PartitionNotFoundError, StreamNotFoundError
from spark_log.stream_spec import validate_stream_name

SELF_REMOVAL_MAX_ATTEMPTS = 5


def read_partition_state(
    session: ZkSession, stream: str, partition: int
) -> tuple[PartitionState, int]:
    """One partition's state and the znode version a conditional write must quote."""
    validate_stream_name(stream)
    try:
        data, version = session.get_json(partition_state_path(stream, partition))
    except ZNodeNotFoundError as exc:
        raise _missing(session, stream, partition) from exc
    return PartitionState.from_json(data), version


def update_isr(
    session: ZkSession,
    stream: str,
    partition: int,
    expected: PartitionState,
    expected_version: int,
    new_isr: Sequence[int],
) -> tuple[PartitionState, int]:
    """The leader's conditional ISR write: (new state, new znode version).

    Only the ISR changes; leader, leader epoch and controller epoch are kept from ``expected``.
    The write succeeds only if the znode is still at ``expected_version``, which also proves
    the leader and its epoch are unchanged. VersionConflictError otherwise: the controller (or
    an earlier write) moved it, and the leader must re-read and, if it no longer leads with
    this epoch, stop acknowledging. InvalidIsrError if ``new_isr`` leaves out the leader,
    repeats a broker or names a non-replica.
    """
    validate_stream_name(stream)
    isr = _registered_only(session, expected, _checked_isr(expected, new_isr))
    if isr == expected.isr:
        return expected, expected_version  # nothing left to write
    updated = dataclasses.replace(expected, isr=isr)
    try:
        version = session.set_json(
            partition_state_path(stream, partition), updated.to_json(), expected_version
        )
    except VersionConflictError as exc:
        raise VersionConflictError(
            f"partition {stream}/{partition} changed since version {expected_version} "
            f"(leader {expected.leader}, leader_epoch {expected.leader_epoch}): re-read it; "
            "stop acknowledging unless still the leader"
        ) from exc
    except ZNodeNotFoundError as exc:
        raise _missing(session, stream, partition) from exc
    return updated, version


def leave_isr_for_data_loss(
    session: ZkSession, stream: str, partition: int, broker_id: int
) -> tuple[PartitionState, int]:
    """Take ``broker_id`` out of the partition's ISR (and leadership) because its log lost
    durable data; the state now and its version, written or (nothing to do) as read.

    Conditional on the version read, re-read and decided again on a conflict (a leader or
    the controller wrote in between): removing oneself is right whatever changed, but it must
    be decided on the current state. VersionConflictError after
    ``SELF_REMOVAL_MAX_ATTEMPTS`` lost writes. The rule is
    ``leader_selection.leave_isr_after_data_loss``.
    """
    for _attempt in range(SELF_REMOVAL_MAX_ATTEMPTS):
        state, version = read_partition_state(session, stream, partition)
        updated = leave_isr_after_data_loss(state, broker_id)
        if updated is None:
            return state, version
        try:
            new_version = session.set_json(
                partition_state_path(stream, partition), updated.to_json(), version
            )
        except VersionConflictError:
            continue
        except ZNodeNotFoundError as exc:
            raise _missing(session, stream, partition) from exc
        return updated, new_version
    raise VersionConflictError(
        f"partition {stream}/{partition} changed under each of {SELF_REMOVAL_MAX_ATTEMPTS} "
        f"attempts to take broker {broker_id} out of its ISR"
    )


def bump_epoch_after_restart(
    session: ZkSession, stream: str, partition: int, broker_id: int, led_epoch: int
) -> tuple[PartitionState, int]:
    """A restarted leader's new leader epoch (``leader_selection.lead_again_after_restart``),
    written conditionally on the version read: the state now and its version, written or, if
    the state already moved on (another leader, a later epoch), as read.
    VersionConflictError when another write won the race: the caller re-reads and retries.
    """
    state, version = read_partition_state(session, stream, partition)
    updated = lead_again_after_restart(state, broker_id, led_epoch)
    if updated is None:
        return state, version
    try:
        new_version = session.set_json(
            partition_state_path(stream, partition), updated.to_json(), version
        )
    except ZNodeNotFoundError as exc:
        raise _missing(session, stream, partition) from exc
    return updated, new_version


def _checked_isr(expected: PartitionState, new_isr: Sequence[int]) -> tuple[int, ...]:
    isr = tuple(new_isr)
    if expected.leader == NO_LEADER:
        raise InvalidIsrError("an offline partition has no leader to change its ISR")
    if expected.leader not in isr:
        raise InvalidIsrError(f"the ISR {list(isr)} must keep its leader {expected.leader}")
    if len(set(isr)) != len(isr) or not set(isr) <= set(expected.replicas):
        raise InvalidIsrError(
            f"the ISR {list(isr)} must be distinct replicas of {list(expected.replicas)}"
        )
    return isr


def _registered_only(
    session: ZkSession, expected: PartitionState, isr: tuple[int, ...]
) -> tuple[int, ...]:
    """``isr`` without the brokers it would add that are not registered (KIP-841's rule): a
    broker whose session expired is still fetching until it learns so, and re-adding it would
    undo the controller's removal, which removes it again, back and forth, each round a
    conditional-write race the leader can lose."""
    return tuple(b for b in isr if b in expected.isr or session.exists(broker_path(b)))


def _missing(session: ZkSession, stream: str, partition: int) -> Exception:
    if not session.exists(stream_path(stream)):
        return StreamNotFoundError(f"stream {stream!r} not found")
    return PartitionNotFoundError(f"stream {stream!r} has no partition {partition}")
