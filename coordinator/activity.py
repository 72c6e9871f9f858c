"""The activity queue: every admin operation, in ZooKeeper, until ``__activity`` holds it.

Liftbridge's activity stream tells consumers about stream and group operations. Here each
operation writes an event znode, **persistent-sequential** and created in the same
ZooKeeper transaction as the change it describes, so an operation and its event exist
together or not at all. Its sequence number is the event's id: ZooKeeper hands them out in
commit order from a counter of the queue's parent (never deleted), so ids only grow. The
leader of ``__activity`` drains the queue in id order into that stream
(``ingest.admin.activity``). Nothing is queued while the activity stream is disabled.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

from coordinator.errors import ZNodeExistsError, ZNodeFormatError, ZNodeNotFoundError
from coordinator.zk import WatchHandle, ZkSession, ZkTransaction
from coordinator.znodes import ACTIVITY_PATH, ACTIVITY_QUEUE_PATH
from spark_log.json_types import JsonObject, JsonValue

EVENT_PREFIX = "e-"
ACTIVITY_VERSION = 1


def event_id(name: str) -> int:
    """``e-0000000042`` → 42."""
    return int(name.removeprefix(EVENT_PREFIX))


class ActivityLog:
    """The switch and the queue of events."""

    def __init__(self, session: ZkSession) -> None:
        self._session = session

    def enabled(self) -> bool:
        try:
            data, _version = self._session.get_json(ACTIVITY_PATH)
        except ZNodeNotFoundError:
            return False
        _check_version(data, ACTIVITY_PATH)
        return data.get("enabled") is True

    def set_enabled(self, enabled: bool) -> None:
        """Switch recording on or off (idempotent); the queue exists from the first switch."""
        self._session.ensure_path(ACTIVITY_QUEUE_PATH)
        body = {"version": ACTIVITY_VERSION, "enabled": enabled}
        try:
            self._session.create_json(ACTIVITY_PATH, body)
        except ZNodeExistsError:
            self._session.set_json(ACTIVITY_PATH, body, -1)

    def add_to(self, txn: ZkTransaction, op: str, **fields: JsonValue) -> None:
        """Queue ``op`` in ``txn`` when recording is on (a no-op otherwise)."""
        if self.enabled():
            txn.create_sequential_json(_prefix(), _event(op, fields))

    def record(self, op: str, **fields: JsonValue) -> None:
        """Queue ``op`` on its own, for an operation that is not a ZooKeeper write (a
        consumer group's membership lives in ``__cursors``)."""
        if self.enabled():
            txn = self._session.transaction()
            txn.create_sequential_json(_prefix(), _event(op, fields))
            txn.commit()

    def pending(self) -> list[tuple[int, JsonObject]]:
        """Every queued event, oldest first, with its id."""
        try:
            names = self._session.children(ACTIVITY_QUEUE_PATH)
        except ZNodeNotFoundError:
            return []
        events = []
        for name in sorted(names, key=event_id):
            try:
                data, _version = self._session.get_json(f"{ACTIVITY_QUEUE_PATH}/{name}")
            except ZNodeNotFoundError:
                continue  # drained meanwhile by a previous leader
            _check_version(data, name)
            data.pop("version")
            events.append((event_id(name), data))
        return events

    def remove(self, event: int) -> None:
        """Forget an event ``__activity`` holds (idempotent)."""
        with contextlib.suppress(ZNodeNotFoundError):
            self._session.delete(f"{ACTIVITY_QUEUE_PATH}/{EVENT_PREFIX}{event:010d}")

    def watch(self, on_change: Callable[[], None]) -> WatchHandle:
        """Call ``on_change()`` (on kazoo's thread) whenever events are queued or removed."""
        self._session.ensure_path(ACTIVITY_QUEUE_PATH)
        return self._session.watch_children(ACTIVITY_QUEUE_PATH, lambda _children: on_change())


def _prefix() -> str:
    return f"{ACTIVITY_QUEUE_PATH}/{EVENT_PREFIX}"


def _event(op: str, fields: JsonObject) -> JsonObject:
    return {"version": ACTIVITY_VERSION, "op": op, "ts_ms": int(time.time() * 1000), **fields}


def _check_version(data: JsonObject, where: str) -> None:
    if data.get("version") != ACTIVITY_VERSION:
        raise ZNodeFormatError(f"{where}: unknown activity version {data.get('version')!r}")
