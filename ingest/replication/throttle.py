"""The reassignment throttle: a per-broker byte rate for replicas a reassignment is adding.

Kafka's ``follower.replication.throttled.rate`` for the replicas of a reassignment: copying a
whole partition to a new broker must not starve the leaders' regular followers (or the
broker's disk) of bandwidth. One token bucket per broker is shared by every fetcher of a
replica that a pending reassignment adds and that is not yet in the ISR; once a replica joins
the ISR it fetches unthrottled, so ``acks=all`` never waits on the throttle.

Bounded: a fetch asks for at most one second's worth of bytes, and after each fetch the
fetcher waits until the bucket has paid for the bytes it got, so the rate over any window
longer than a second stays within ``rate_bytes_per_s`` (plus one fetch). The bytes are charged
from the moment their fetch was sent, not from when it returned: the time the fetch and the
append took counts towards paying for them, or the copy would run at well under the rate (the
full wait after the work, every round).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

# The smallest fetch a throttled follower asks for (one stored batch is at most 512 KiB).
MIN_THROTTLED_FETCH_BYTES = 64 * 1024


class ReplicationThrottle:
    """A token bucket shared by the broker's throttled fetchers (one event loop, no lock)."""

    def __init__(self, rate_bytes_per_s: int, clock: Callable[[], float] = time.monotonic) -> None:
        if rate_bytes_per_s <= 0:
            raise ValueError("rate_bytes_per_s must be > 0")
        self.rate_bytes_per_s = rate_bytes_per_s
        self._clock = clock
        self._debt_until = clock()  # when the bytes fetched so far are paid for

    def max_fetch_bytes(self, default: int) -> int:
        """Ask for at most one second's worth (never less than one small batch)."""
        return min(default, max(self.rate_bytes_per_s, MIN_THROTTLED_FETCH_BYTES))

    def now(self) -> float:
        """The throttle's clock: what a fetcher notes when it sends a fetch."""
        return self._clock()

    def delay_for(self, nbytes: int, fetched_since: float | None = None) -> float:
        """Charge ``nbytes``, fetched by a fetch sent at ``fetched_since`` (default: now);
        the seconds to wait before the next throttled fetch. Time before that fetch is not
        saved up as a burst."""
        now = self._clock()
        since = now if fetched_since is None else min(fetched_since, now)
        self._debt_until = max(self._debt_until, since) + nbytes / self.rate_bytes_per_s
        return max(0.0, self._debt_until - now)

    async def pace(self, nbytes: int, fetched_since: float | None = None) -> None:
        """Charge ``nbytes`` and wait until the rate allows more."""
        delay = self.delay_for(nbytes, fetched_since)
        if delay > 0:
            await asyncio.sleep(delay)
