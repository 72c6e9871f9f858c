"""The broker registry: one ephemeral znode per live broker, like Kafka's /brokers/ids.

The znode lives exactly as long as the broker's ZooKeeper session, so "registered" means
"alive as far as ZooKeeper can tell", and the controller learns of a crash when the session
expires. After a session loss the broker must register again on its new session.
"""

from __future__ import annotations

import contextlib
import time

from coordinator.errors import (
    BrokerIdInUseError,
    ZNodeExistsError,
    ZNodeFormatError,
    ZNodeNotFoundError,
)
from coordinator.zk import ZkSession
from coordinator.znodes import (
    BROKER_IDS_PATH,
    SHUTTING_DOWN_PATH,
    BrokerInfo,
    ShutdownNotice,
    broker_path,
    shutdown_notice_path,
)

# How long to wait for a previous incarnation's registration to expire, in session timeouts:
# its session needs up to one timeout to expire, plus slack for the server to notice.
REGISTER_WAIT_SESSION_TIMEOUTS = 2.0


def register_broker(session: ZkSession, info: BrokerInfo, wait_s: float | None = None) -> None:
    """Create this broker's ephemeral registration, waiting out a stale one.

    A registration can outlive its broker: a node killed with -9 leaves its session open until
    the session times out, and a restarted ZooKeeper restores open sessions. So an existing
    znode owned by another session is waited on (by watch) for up to ``wait_s`` (default two
    session timeouts) before BrokerIdInUseError. One owned by this very session (a retry after
    a connection loss that hid a successful create) counts as registered.
    """
    budget_s = (
        wait_s
        if wait_s is not None
        else REGISTER_WAIT_SESSION_TIMEOUTS * (session.session_timeout_s)
    )
    path = broker_path(info.broker_id)
    deadline = time.monotonic() + budget_s
    session.ensure_path(BROKER_IDS_PATH)
    while True:
        try:
            session.create_json(path, info.to_json(), ephemeral=True)
            return
        except ZNodeExistsError:
            owner = _owner(session, path)
            if owner is not None and owner == session.session_id:
                return
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not session.wait_deleted(path, remaining):
            raise BrokerIdInUseError(_in_use_message(session, info.broker_id, budget_s))


def deregister_broker(session: ZkSession, broker_id: int) -> None:
    """Remove this broker's registration (clean shutdown), never another session's."""
    path = broker_path(broker_id)
    try:
        if _owner(session, path) == session.session_id:
            session.delete(path)
    except ZNodeNotFoundError:
        return


def live_brokers(session: ZkSession) -> list[BrokerInfo]:
    """Registered brokers, sorted by broker id."""
    try:
        ids = session.children(BROKER_IDS_PATH)
    except ZNodeNotFoundError:
        return []
    brokers = []
    for broker_id in sorted(ids, key=int):
        try:
            data, _version = session.get_json(broker_path(int(broker_id)))
        except ZNodeNotFoundError:  # expired between the listing and the read
            continue
        brokers.append(BrokerInfo.from_json(data))
    return brokers


def _owner(session: ZkSession, path: str) -> int | None:
    try:
        return session.ephemeral_owner(path)
    except ZNodeNotFoundError:
        return None


def _in_use_message(session: ZkSession, broker_id: int, waited_s: float) -> str:
    holder = ""
    try:
        data, _version = session.get_json(broker_path(broker_id))
        holder = (
            f" (registered by {data.get('api_url')}, started_at_ms {data.get('started_at_ms')})"
        )
    except ZNodeNotFoundError:
        pass
    return (
        f"broker id {broker_id} is in use by another live ZooKeeper session{holder}; waited "
        f"{waited_s:.1f}s for it to expire. Another node with this broker_id is running, or a "
        "previous incarnation's session has not expired yet: stop the other node, or use a "
        "different broker_id."
    )


def live_broker_epochs(session: ZkSession) -> dict[int, int]:
    """Each registered broker's epoch: the czxid of its registration znode (Kafka's KIP-380).

    A broker that restarts registers a new ephemeral znode, whose creation zxid is larger than
    any before it, so the controller can tell a new incarnation of broker 2 (which may have
    lost unflushed records and must not simply keep leading) from the same broker seen again.
    The epoch is read from the znode's metadata, not stored in its JSON, so registrations stay
    exactly as they were.
    """
    try:
        ids = session.children(BROKER_IDS_PATH)
    except ZNodeNotFoundError:
        return {}
    epochs = {}
    for name in ids:
        try:
            epochs[int(name)] = session.creation_zxid(broker_path(int(name)))
        except ZNodeNotFoundError:  # expired between the listing and the read
            continue
    return dict(sorted(epochs.items()))


def announce_shutdown(session: ZkSession, broker_id: int) -> None:
    """Mark this (registered) broker as shutting down, until its session ends.

    Every controller, this one or the next, then leaves it out of leader elections: in a
    controlled shutdown of several brokers at once, leadership must never move to a broker
    that is about to stop too (Kafka's ``shuttingDownBrokerIds``, kept in ZooKeeper here so it
    survives a controller that stops in the middle). Ephemeral, so it goes with the session. A
    notice owned by another session is a previous incarnation's: it is replaced.
    ZNodeNotFoundError if the broker is not registered.
    """
    notice = ShutdownNotice(broker_id, session.creation_zxid(broker_path(broker_id)))
    path = shutdown_notice_path(broker_id)
    session.ensure_path(SHUTTING_DOWN_PATH)
    try:
        session.create_json(path, notice.to_json(), ephemeral=True)
        return
    except ZNodeExistsError:
        if _owner(session, path) == session.session_id:
            return
    with contextlib.suppress(ZNodeNotFoundError):
        session.delete(path)
    session.create_json(path, notice.to_json(), ephemeral=True)


def shutting_down_brokers(session: ZkSession, epochs: dict[int, int]) -> frozenset[int]:
    """The brokers among ``epochs`` (live broker -> epoch) that announced a shutdown in their
    current incarnation; notices of earlier incarnations and unreadable ones are ignored."""
    try:
        names = session.children(SHUTTING_DOWN_PATH)
    except ZNodeNotFoundError:
        return frozenset()
    stopping = set()
    for name in names:
        try:
            data, _version = session.get_json(shutdown_notice_path(int(name)))
            notice = ShutdownNotice.from_json(data)
        except (ZNodeNotFoundError, ZNodeFormatError, ValueError):
            continue
        if epochs.get(notice.broker_id) == notice.broker_epoch:
            stopping.add(notice.broker_id)
    return frozenset(stopping)
