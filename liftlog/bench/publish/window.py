"""A fixed window of in-flight publishes: the acked-throughput loop shared by both sides.

``window`` workers each publish and await the ack before publishing again, so exactly
``window`` messages are outstanding at any time (a sliding window) without one task per
message: the client-side overhead is the same small loop for Liftlog and for JetStream.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from liftlog.bench.publish.publishers import PUBLISH_ERRORS

# After this many failed publishes a run stops early: with a dead server every publish waits
# out its ack timeout, and the figure is already "failed", not a rate.
MAX_FAILED_PUBLISHES = 1000


@dataclass
class WindowOutcome:
    """How many calls succeeded and failed, and the wall time of the whole window run."""

    acked: int = 0
    failed: int = 0
    started: int = 0
    seconds: float = 0.0
    first_error: str | None = None


async def run_window(
    count: int, window: int, send: Callable[[], Awaitable[None]], outcome: WindowOutcome
) -> WindowOutcome:
    """Call ``send`` ``count`` times with at most ``window`` calls outstanding.

    ``outcome`` is filled in as the run goes, so a progress ticker can read ``acked``.
    A failed call is counted (with the first error kept), never retried: a retry would hide
    the loss the benchmark exists to show. ``MAX_FAILED_PUBLISHES`` failures end the run.
    """

    async def worker() -> None:
        while outcome.started < count and outcome.failed < MAX_FAILED_PUBLISHES:
            outcome.started += 1
            try:
                await send()
            except PUBLISH_ERRORS as exc:
                outcome.failed += 1
                if outcome.first_error is None:
                    outcome.first_error = f"{type(exc).__name__}: {exc}"
            else:
                outcome.acked += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(min(window, count))))
    outcome.seconds = time.perf_counter() - t0
    return outcome
