"""Produce requests with ``acks=all`` wait here until the high watermark passes them.

Kafka calls this the produce purgatory. Entries arrive in offset order (one writer per
partition), so a deque released from the front is enough.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from spark_log.errors import LiftlogError


@dataclass(slots=True)
class PendingAck:
    """An ack to send once the HW reaches ``end_offset`` (exclusive)."""

    end_offset: int
    complete: Callable[[], None]
    fail: Callable[[LiftlogError], None]


class Purgatory:
    def __init__(self) -> None:
        self._pending: deque[PendingAck] = deque()

    def __len__(self) -> int:
        return len(self._pending)

    def add(self, ack: PendingAck) -> None:
        self._pending.append(ack)

    def release(self, high_watermark: int) -> int:
        """Complete every ack whose records are all below ``high_watermark``."""
        released = 0
        pending = self._pending
        while pending and pending[0].end_offset <= high_watermark:
            pending.popleft().complete()
            released += 1
        return released

    def fail_all(self, error: LiftlogError) -> None:
        """Fail everything waiting (the leader lost its leadership or is stopping)."""
        while self._pending:
            self._pending.popleft().fail(error)
