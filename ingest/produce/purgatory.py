"""Produce requests with ``acks=all`` wait here until the high watermark passes them.

Kafka calls this the produce purgatory. Entries arrive in offset order (one writer per
partition), so a deque released from the front is enough. Entries are plain tuples and the
completion callbacks are fixed per purgatory, so parking a request allocates almost nothing.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

from spark_log.errors import LiftlogError

T = TypeVar("T")


class Purgatory(Generic[T]):
    def __init__(
        self, complete: Callable[[T], None], fail: Callable[[T, LiftlogError], None]
    ) -> None:
        self._pending: deque[tuple[int, T]] = deque()
        self._complete = complete
        self._fail = fail

    def __len__(self) -> int:
        return len(self._pending)

    def add(self, end_offset: int, item: T) -> None:
        """Park ``item`` until the HW reaches ``end_offset`` (exclusive)."""
        self._pending.append((end_offset, item))

    def release(self, high_watermark: int) -> int:
        """Complete every entry whose records are all below ``high_watermark``."""
        released = 0
        pending, complete = self._pending, self._complete
        while pending and pending[0][0] <= high_watermark:
            complete(pending.popleft()[1])
            released += 1
        return released

    def fail_all(self, error: LiftlogError) -> None:
        """Fail everything waiting (the leader lost its leadership or is stopping)."""
        while self._pending:
            self._fail(self._pending.popleft()[1], error)
