"""The one clock of the ingest node: wall time for records and timers, monotonic time for rates.

Every piece that reads time takes a ``Clock`` instead of calling ``time`` itself, so unit tests
drive time by hand (a dedup window expiring, an ISR shrink, a retention check falling due)
without sleeping; production passes ``SYSTEM_CLOCK``.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Where the node reads the time."""

    def now_ms(self) -> int:
        """Wall-clock milliseconds since the epoch (record timestamps, windows, timers)."""
        ...

    def monotonic_s(self) -> float:
        """Seconds on a clock that never goes back (rate limits of log lines)."""
        ...


class SystemClock:
    """The machine's clocks."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_s(self) -> float:
        return time.monotonic()


SYSTEM_CLOCK: Clock = SystemClock()
"""The default clock wherever none is passed."""
