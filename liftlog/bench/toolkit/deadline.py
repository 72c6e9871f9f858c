"""Every phase runs under a deadline: a hung server must end the run, not stall it forever."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from liftlog.bench.errors import BenchError

T = TypeVar("T")


async def within(timeout_s: float, what: str, awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` for at most ``timeout_s``; a timeout becomes a BenchError."""
    try:
        async with asyncio.timeout(timeout_s):
            return await awaitable
    except TimeoutError as exc:
        raise BenchError(f"{what} did not finish within {timeout_s:.0f}s") from exc
