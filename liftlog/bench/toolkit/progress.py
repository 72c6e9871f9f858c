"""Progress lines, so a multi-minute run never looks hung.

Each line carries the time since the run began; long phases add a periodic count.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable

TICK_INTERVAL_S = 5.0


class Progress:
    """Prints ``[bench  12.3s] message`` lines, flushed at once (output may be piped)."""

    def __init__(self) -> None:
        self._t0 = time.monotonic()

    def say(self, message: str) -> None:
        print(f"[bench {time.monotonic() - self._t0:6.1f}s] {message}", flush=True)

    @contextlib.asynccontextmanager
    async def ticking(
        self, label: str, done: Callable[[], int], total: int, interval_s: float = TICK_INTERVAL_S
    ) -> AsyncIterator[None]:
        """Print ``label: done/total`` every ``interval_s`` while the body runs."""

        async def tick() -> None:
            while True:
                await asyncio.sleep(interval_s)
                self.say(f"  {label}: {done():,}/{total:,}")

        task = asyncio.create_task(tick())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
