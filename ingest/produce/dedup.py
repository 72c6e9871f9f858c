"""The ``Nats-Msg-Id`` deduplication window (JetStream's name and semantics).

A duplicate inside the window is acknowledged with the original offset and not stored again.
The window is rebuilt after a restart from the records themselves (the id is kept in each
record's headers), so no side file can disagree with the log.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DedupEntry:
    offset: int
    count: int
    timestamp_ms: int


class DedupWindow:
    """Bounded by time (``window_ms``) and by size (``max_ids``), oldest evicted first."""

    def __init__(self, window_ms: int, max_ids: int) -> None:
        self._window_ms = window_ms
        self._max_ids = max_ids
        self._entries: OrderedDict[str, DedupEntry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, msg_id: str, now_ms: int) -> DedupEntry | None:
        entry = self._entries.get(msg_id)
        if entry is None or now_ms - entry.timestamp_ms > self._window_ms:
            return None
        return entry

    def add(self, msg_id: str, offset: int, count: int, timestamp_ms: int) -> None:
        self._entries[msg_id] = DedupEntry(offset, count, timestamp_ms)
        self._entries.move_to_end(msg_id)
        while len(self._entries) > self._max_ids:
            self._entries.popitem(last=False)

    def expire(self, now_ms: int) -> None:
        """Drop entries older than the window (called from the writer's idle path)."""
        horizon = now_ms - self._window_ms
        while self._entries:
            oldest = next(iter(self._entries.values()))
            if oldest.timestamp_ms >= horizon:
                return
            self._entries.popitem(last=False)

    def forget_from(self, offset: int) -> None:
        """Forget ids of records at or after ``offset`` (after a log truncation)."""
        stale = [k for k, e in self._entries.items() if e.offset >= offset]
        for key in stale:
            del self._entries[key]
