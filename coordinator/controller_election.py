"""Controller election through ZooKeeper, and the controller epoch that fences it.

A broker becomes controller by creating the ephemeral ``/v1/controller``; in the same
ZooKeeper transaction it increments the persistent ``/v1/controller_epoch`` with a conditional
write (creating it at 1 the first time). Both or neither: a broker never holds the seat
without a new epoch, and two brokers can never get the same epoch. The epoch znode's version
after that write is the fence every later controller write checks (``coordinator.fencing``).

Losers watch ``/v1/controller`` and campaign again when it disappears (the controller's
session ended). These are blocking calls: the asyncio controller runs them in a thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from coordinator.errors import (
    VersionConflictError,
    ZkUnavailableError,
    ZNodeExistsError,
    ZNodeNotFoundError,
)
from coordinator.zk import ZkSession
from coordinator.znodes import (
    CONTROLLER_EPOCH_PATH,
    CONTROLLER_PATH,
    INITIAL_CONTROLLER_EPOCH,
    V1,
    ControllerEpoch,
    ControllerInfo,
)

# The version a znode has right after it is created (ZooKeeper counts writes from 0).
CREATED_ZNODE_VERSION = 0


@dataclass(frozen=True)
class ControllerFence:
    """What a controller won: its epoch, and the epoch znode's version its writes must check."""

    broker_id: int
    controller_epoch: int
    epoch_zk_version: int


def current_controller(session: ZkSession) -> tuple[int, int] | None:
    """(broker_id, controller_epoch) of the elected controller, None while there is none."""
    try:
        data, _version = session.get_json(CONTROLLER_PATH)
    except ZNodeNotFoundError:
        return None
    info = ControllerInfo.from_json(data)
    return info.broker_id, info.controller_epoch


def read_controller_epoch(session: ZkSession) -> tuple[int, int] | None:
    """(controller_epoch, znode version) of ``/v1/controller_epoch``; None before any election."""
    try:
        data, version = session.get_json(CONTROLLER_EPOCH_PATH)
    except ZNodeNotFoundError:
        return None
    return ControllerEpoch.from_json(data).controller_epoch, version


def try_become_controller(session: ZkSession, broker_id: int) -> ControllerFence | None:
    """Campaign once: the fence if this broker won, None if another holds the seat or won.

    A connection loss during the transaction leaves its outcome unknown; the seat is then
    checked: held by this very session with the epoch it wrote means won, anything else
    re-raises (the caller retries when the session is back).
    """
    session.ensure_path(V1)
    current = read_controller_epoch(session)
    epoch = (current[0] if current else INITIAL_CONTROLLER_EPOCH) + 1
    txn = session.transaction().create_json(
        CONTROLLER_PATH, ControllerInfo(broker_id, epoch).to_json(), ephemeral=True
    )
    if current is None:
        txn.create_json(CONTROLLER_EPOCH_PATH, ControllerEpoch(epoch).to_json())
        epoch_zk_version = CREATED_ZNODE_VERSION
    else:
        txn.set_json(CONTROLLER_EPOCH_PATH, ControllerEpoch(epoch).to_json(), current[1])
        epoch_zk_version = current[1] + 1
    fence = ControllerFence(broker_id, epoch, epoch_zk_version)
    try:
        txn.commit()
    except (ZNodeExistsError, VersionConflictError):
        return None  # the seat is taken, or another campaign bumped the epoch first
    except ZkUnavailableError:
        if holds_controllership(session, fence):
            return fence
        raise
    return fence


def holds_controllership(session: ZkSession, fence: ControllerFence) -> bool:
    """Whether this session still holds the seat it won with ``fence`` (same epoch, same owner).

    False once the session expired (the ephemeral znode went with it), or after a newer
    election; also when ``/v1/controller_epoch`` moved on without a new seat (a manual edit).
    """
    try:
        data, _version = session.get_json(CONTROLLER_PATH)
        owner = session.ephemeral_owner(CONTROLLER_PATH)
    except ZNodeNotFoundError:
        return False
    if owner is None or owner != session.session_id:
        return False
    if ControllerInfo.from_json(data) != ControllerInfo(fence.broker_id, fence.controller_epoch):
        return False
    epoch = read_controller_epoch(session)
    return epoch == (fence.controller_epoch, fence.epoch_zk_version)


def release_seat(session: ZkSession, controller_epoch: int | None = None) -> bool:
    """Delete ``/v1/controller`` if this session holds it (and, if given, with this epoch).

    Used on a clean stop (the others need not wait for a session timeout), after a failed
    fence check while the seat is still ours (a fresh election with a higher epoch follows),
    and when a lost campaign finds the seat held by this very session without the controller
    acting on it (an earlier release failed). Never deletes another session's seat. True if a
    znode was deleted.
    """
    try:
        data, version = session.get_json(CONTROLLER_PATH)
        owner = session.ephemeral_owner(CONTROLLER_PATH)
    except ZNodeNotFoundError:
        return False
    if owner is None or owner != session.session_id:
        return False
    if controller_epoch is not None and (
        ControllerInfo.from_json(data).controller_epoch != controller_epoch
    ):
        return False
    try:
        session.delete(CONTROLLER_PATH, version)
    except (ZNodeNotFoundError, VersionConflictError):
        return False
    return True
