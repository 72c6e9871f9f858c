"""The controller's fenced partition-state write: one transaction, two conditions.

``check(/v1/controller_epoch, version read when elected)`` + ``set(state, state version)``.
The state version alone is not enough: a deposed controller (paused past its session timeout,
say) may still hold a state version nobody changed since, and would overwrite the new
controller's view. The epoch check makes every write of a deposed controller fail, whatever
it read (Kafka's zombie-controller fix, KAFKA-6082, done with ZooKeeper's multi the same way).
"""

from __future__ import annotations

import dataclasses

from coordinator.controller_election import ControllerFence, read_controller_epoch
from coordinator.errors import ControllerMovedError, VersionConflictError, ZNodeNotFoundError
from coordinator.zk import ZkSession
from coordinator.znodes import CONTROLLER_EPOCH_PATH, PartitionState, partition_state_path
from spark_log.errors import PartitionNotFoundError


def write_partition_state_fenced(
    session: ZkSession,
    fence: ControllerFence,
    stream: str,
    partition: int,
    state: PartitionState,
    expected_version: int,
) -> tuple[PartitionState, int]:
    """Write ``state`` (stamped with the fence's controller epoch) as one fenced transaction.

    Returns the state written and its new znode version. ControllerMovedError: a newer
    controller exists, resign. VersionConflictError: the partition state moved (a leader
    changed its ISR): re-read and decide again. PartitionNotFoundError: the stream is gone.
    """
    stamped = dataclasses.replace(state, controller_epoch=fence.controller_epoch)
    txn = session.transaction()
    txn.check(CONTROLLER_EPOCH_PATH, fence.epoch_zk_version)
    txn.set_json(partition_state_path(stream, partition), stamped.to_json(), expected_version)
    try:
        txn.commit()
    except (VersionConflictError, ZNodeNotFoundError) as exc:
        _raise_if_moved(session, fence)
        if isinstance(exc, ZNodeNotFoundError):
            raise PartitionNotFoundError(
                f"partition {stream}/{partition} no longer exists (stream deleted)"
            ) from exc
        raise VersionConflictError(
            f"partition {stream}/{partition} changed since version {expected_version}; "
            "re-read its state"
        ) from exc
    return stamped, expected_version + 1


def _raise_if_moved(session: ZkSession, fence: ControllerFence) -> None:
    """Tell the two failing conditions apart: the epoch znode moved means we were deposed.

    The epoch znode only ever moves forward, so still finding our version after the failure
    means it was the state's condition that failed.
    """
    current = read_controller_epoch(session)
    if current is None or current[1] != fence.epoch_zk_version:
        now = "missing" if current is None else f"at epoch {current[0]}"
        raise ControllerMovedError(
            f"controller epoch {fence.controller_epoch} is no longer current "
            f"(/v1/controller_epoch is {now}): a newer controller was elected"
        )


def refuse_newer_controller_state(
    fence: ControllerFence, stream: str, partition: int, state: PartitionState
) -> None:
    """A state written by a newer controller generation proves this controller is deposed.

    Kafka's controller aborts in the same case; checking before writing saves a doomed
    transaction and resigns sooner.
    """
    if state.controller_epoch > fence.controller_epoch:
        raise ControllerMovedError(
            f"partition {stream}/{partition} was written by controller epoch "
            f"{state.controller_epoch}, newer than this controller's {fence.controller_epoch}"
        )
