"""Pending reassignments in ZooKeeper: submit, list, cancel, finish (see docs/znodes.md).

Any node may submit (the znodes are the request, as Kafka's ``/admin/reassign_partitions``
was); the controller watches ``/v1/reassignments`` and carries each one out, resuming from
the znodes after a failover. Only the controller deletes one, in a transaction fenced by its
controller epoch.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence

from coordinator.brokers import live_broker_epochs
from coordinator.controller_election import ControllerFence
from coordinator.errors import (
    ControllerMovedError,
    ReassignmentInProgressError,
    VersionConflictError,
    ZNodeExistsError,
    ZNodeFormatError,
    ZNodeNotFoundError,
)
from coordinator.streams import StreamStore
from coordinator.zk import ZkSession
from coordinator.znodes import (
    CONTROLLER_EPOCH_PATH,
    REASSIGNMENT_SEPARATOR,
    REASSIGNMENTS_PATH,
    PartitionReassignment,
    reassignment_path,
)
from spark_log.errors import InvalidRequestError, NoReassignmentError, PartitionNotFoundError

# A cancel races only with the controller finishing a reassignment: a few re-reads settle it.
CANCEL_MAX_ATTEMPTS = 5


def submit(
    session: ZkSession, stream: str, targets: Mapping[int, Sequence[int]]
) -> list[PartitionReassignment]:
    """Record one reassignment per partition of ``targets``; all are checked before any is
    written. Refused: an unknown partition, a target naming a broker that is not live, fewer
    targets than the stream's min ISR, a partition already being reassigned
    (ReassignmentInProgressError)."""
    store = StreamStore(session)
    min_isr = store.get(stream).spec.effective_min_isr
    states = store.partition_states(stream)
    live = set(live_broker_epochs(session))
    now_ms = int(time.time() * 1000)
    planned = []
    for partition, target in sorted(targets.items()):
        if partition not in states:
            raise PartitionNotFoundError(f"stream {stream!r} has no partition {partition}")
        unknown = sorted(set(target) - live)
        if unknown:
            raise InvalidRequestError(f"target brokers {unknown} are not live brokers")
        if len(target) < min_isr:
            raise InvalidRequestError(
                f"partition {partition}: {len(target)} target replica(s) is fewer than the "
                f"stream's min ISR {min_isr}: acks=all would always be refused"
            )
        try:
            planned.append(
                PartitionReassignment(
                    stream, partition, tuple(target), states[partition][0].replicas, now_ms
                )
            )
        except ZNodeFormatError as exc:
            raise InvalidRequestError(f"partition {partition}: {exc.message}") from exc
    session.ensure_path(REASSIGNMENTS_PATH)
    txn = session.transaction()
    for item in planned:
        txn.create_json(reassignment_path(stream, item.partition), item.to_json())
    try:
        txn.commit()
    except ZNodeExistsError as exc:
        raise ReassignmentInProgressError(
            f"a partition of {stream!r} is already being reassigned: {exc.message}"
        ) from exc
    return planned


def pending(session: ZkSession, stream: str | None = None) -> list[PartitionReassignment]:
    """Every pending reassignment (of ``stream`` only, if given), in name order."""
    return [item for item, _version in _pending_versioned(session, stream)]


def cancel(
    session: ZkSession, stream: str, partition: int | None = None
) -> list[PartitionReassignment]:
    """Mark the pending reassignment of ``partition`` (every one of ``stream`` when None) as
    cancelling; the controller then reverts each partition to its original replicas.

    The mark is durable before this returns, so a controller failover finishes the cancel.
    Each znode is rewritten (deleted at the version read and created again, in one
    transaction) rather than updated in place: the controller watches the children of
    ``/v1/reassignments``, and a rewrite is what that watch sees. Already cancelling: left as
    is. Refused: an unknown stream or partition, nothing pending (NoReassignmentError).
    """
    states = StreamStore(session).partition_states(stream)
    if partition is not None and partition not in states:
        raise PartitionNotFoundError(f"stream {stream!r} has no partition {partition}")
    for _attempt in range(CANCEL_MAX_ATTEMPTS):
        found = [
            (item, version)
            for item, version in _pending_versioned(session, stream)
            if partition is None or item.partition == partition
        ]
        if not found:
            raise NoReassignmentError(_nothing_pending(stream, partition))
        try:
            _mark_cancelling(session, [(i, v) for i, v in found if not i.cancelling])
        except (VersionConflictError, ZNodeNotFoundError):
            continue  # one finished or was rewritten meanwhile: read again
        return [dataclasses.replace(item, cancelling=True) for item, _version in found]
    raise VersionConflictError(
        f"the reassignments of {stream!r} changed under every one of {CANCEL_MAX_ATTEMPTS} "
        "attempts to cancel them; try again"
    )


def _mark_cancelling(session: ZkSession, found: list[tuple[PartitionReassignment, int]]) -> None:
    if not found:
        return
    txn = session.transaction()
    for item, version in found:
        path = reassignment_path(item.stream, item.partition)
        txn.delete(path, version)
        txn.create_json(path, dataclasses.replace(item, cancelling=True).to_json())
    txn.commit()


def _nothing_pending(stream: str, partition: int | None) -> str:
    if partition is None:
        return f"stream {stream!r} has no reassignment in progress"
    return f"partition {partition} of {stream!r} has no reassignment in progress"


def _pending_versioned(
    session: ZkSession, stream: str | None
) -> list[tuple[PartitionReassignment, int]]:
    try:
        names = sorted(session.children(REASSIGNMENTS_PATH))
    except ZNodeNotFoundError:
        return []
    found = []
    for name in names:
        owner, _sep, _p = name.rpartition(REASSIGNMENT_SEPARATOR)
        if stream is not None and owner != stream:
            continue
        try:
            data, version = session.get_json(f"{REASSIGNMENTS_PATH}/{name}")
        except ZNodeNotFoundError:
            continue  # finished meanwhile
        found.append((PartitionReassignment.from_json(data), version))
    return found


def finish(session: ZkSession, fence: ControllerFence, item: PartitionReassignment) -> None:
    """Delete the reassignment's znode, fenced by the controller epoch (a deposed controller's
    delete fails, the new controller decides). Already gone: nothing to do."""
    txn = session.transaction()
    txn.check(CONTROLLER_EPOCH_PATH, fence.epoch_zk_version)
    txn.delete(reassignment_path(item.stream, item.partition))
    try:
        txn.commit()
    except ZNodeNotFoundError:
        return
    except VersionConflictError as exc:  # only the epoch check has a version
        raise ControllerMovedError(
            f"controller epoch {fence.controller_epoch} is no longer current"
        ) from exc
