"""Wait for a condition with a deadline: the only way tests wait (never a fixed sleep).

A fixed sleep is either too short on a slow CI machine (flaky) or too long everywhere else
(slow); polling a condition with a timeout is as fast as the system and fails with a message.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

DEFAULT_WAIT_TIMEOUT_S = 10.0
DEFAULT_WAIT_INTERVAL_S = 0.02
LOOP_TURN_S = 0.0  # asyncio.sleep(0): give the other ready tasks one turn


def wait_for(
    predicate: Callable[[], T],
    timeout_s: float = DEFAULT_WAIT_TIMEOUT_S,
    interval_s: float = DEFAULT_WAIT_INTERVAL_S,
    message: str = "condition",
) -> T:
    """Poll ``predicate`` until it returns something truthy, and return that value.

    Raises AssertionError naming ``message`` (and the last value seen) after ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"timed out after {timeout_s:.1f}s waiting for {message} (last value: {value!r})"
            )
        time.sleep(interval_s)


async def wait_for_async(
    predicate: Callable[[], T] | Callable[[], Awaitable[T]],
    timeout_s: float = DEFAULT_WAIT_TIMEOUT_S,
    interval_s: float = DEFAULT_WAIT_INTERVAL_S,
    message: str = "condition",
) -> T:
    """``wait_for`` on an event loop: polls without blocking the loop it runs on. A
    predicate may be a coroutine function (each poll awaits its result)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if loop.time() >= deadline:
            raise AssertionError(
                f"timed out after {timeout_s:.1f}s waiting for {message} (last value: {value!r})"
            )
        await asyncio.sleep(interval_s)


async def one_loop_turn() -> None:
    """Let every other ready task run once (a yield, not a wait for any state)."""
    await asyncio.sleep(LOOP_TURN_S)
