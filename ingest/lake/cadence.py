"""When a partition leader exports: enough unexported committed bytes, or an old enough
oldest unexported record (pure bookkeeping, no I/O).

The leader learns offsets, sizes and append times from its own write cycles. Records it did
not append itself while tracking (a new leader's backlog from its predecessor, or cycles
dropped to keep the bookkeeping bounded) have unknown size and age: they count as overdue,
so a new leader exports its predecessor's unexported tail at once.
"""

from __future__ import annotations

from bisect import bisect_right

MAX_TRACKED_CYCLES = 100_000


class ExportCadence:
    def __init__(self, min_bytes: int, interval_ms: int, tracked_from: int) -> None:
        self._min_bytes = min_bytes
        self._interval_ms = interval_ms
        self._tracked_from = tracked_from  # offsets below were appended before tracking
        self._appended_to = tracked_from  # where the next tracked cycle must start
        self._ends: list[int] = []  # next offset after each tracked cycle, increasing
        self._totals: list[int] = []  # bytes appended through each cycle, cumulative
        self._times: list[int] = []  # append time (ms) of each cycle's records
        self._head = 0  # cycles before this index are exported and forgotten
        self._total = 0
        self._base_total = 0  # bytes appended before the first cycle in the lists

    def appended(self, base_offset: int, next_offset: int, size_bytes: int, time_ms: int) -> None:
        """A write cycle appended ``[base_offset, next_offset)`` in ``size_bytes``."""
        self._appended_to, expected = next_offset, self._appended_to
        if base_offset != expected:  # not contiguous with what is tracked: start over
            self._forget_all(next_offset)
            return
        self._total += size_bytes
        self._ends.append(next_offset)
        self._totals.append(self._total)
        self._times.append(time_ms)
        if len(self._ends) - self._head > MAX_TRACKED_CYCLES:
            self._tracked_from = self._ends[self._head]
            self._head += 1
        self._compact()

    def exported(self, lake_offset: int) -> None:
        """The lake now holds everything below ``lake_offset``: forget those cycles."""
        self._head = max(self._head, bisect_right(self._ends, lake_offset, lo=self._head))
        self._compact()

    def due(self, lake_offset: int, high_watermark: int, now_ms: int) -> bool:
        """Whether committed records wait and the size or age threshold is reached."""
        if lake_offset >= high_watermark:
            return False
        if lake_offset < self._tracked_from:
            return True
        if self.pending_bytes(lake_offset, high_watermark) >= self._min_bytes:
            return True
        oldest = self._oldest_time_ms(lake_offset)
        return oldest is None or now_ms - oldest >= self._interval_ms

    def ms_until_due(self, lake_offset: int, high_watermark: int, now_ms: int) -> int | None:
        """How long until the age threshold makes committed records due; None if none wait."""
        if lake_offset >= high_watermark:
            return None
        if self.due(lake_offset, high_watermark, now_ms):
            return 0
        oldest = self._oldest_time_ms(lake_offset)
        return 0 if oldest is None else max(0, oldest + self._interval_ms - now_ms)

    def pending_bytes(self, lake_offset: int, high_watermark: int) -> int:
        """Bytes of the tracked cycles between ``lake_offset`` and ``high_watermark``."""
        first = bisect_right(self._ends, lake_offset, lo=self._head)
        last = bisect_right(self._ends, high_watermark, lo=self._head) - 1
        if last < first:
            return 0
        before = self._totals[first - 1] if first > 0 else self._base_total
        return self._totals[last] - before

    def _oldest_time_ms(self, lake_offset: int) -> int | None:
        index = bisect_right(self._ends, lake_offset, lo=self._head)
        return self._times[index] if index < len(self._times) else None

    def _forget_all(self, tracked_from: int) -> None:
        self._tracked_from = tracked_from
        self._ends, self._totals, self._times = [], [], []
        self._head = 0
        self._total = self._base_total = 0

    def _compact(self) -> None:
        """Drop forgotten cycles once they are the larger part of the lists (amortised O(1))."""
        if self._head > 1024 and self._head * 2 > len(self._ends):
            self._base_total = self._totals[self._head - 1]
            del self._ends[: self._head], self._totals[: self._head], self._times[: self._head]
            self._head = 0
