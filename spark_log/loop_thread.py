"""One asyncio event loop on a background daemon thread, for callers that are not async.

Scripts and notebooks want plain calls; the client is async. Running every call on one
long-lived loop (instead of ``asyncio.run`` per call) keeps the NATS connection, its ack
subscription and cached stream specs alive between calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from spark_log.errors import UnavailableError

T = TypeVar("T")

LOOP_STOP_TIMEOUT_S = 10.0


class LoopThread:
    """Owns the loop and its thread; ``run`` blocks the caller until a coroutine finishes."""

    def __init__(self, name: str = "liftlog-loop") -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and not self._loop.is_closed()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and return its result (or raise its error). A
        KeyboardInterrupt in the caller cancels the coroutine too."""
        if not self.running:
            coro.close()
            raise UnavailableError("the client is closed")
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def stop(self) -> None:
        """Stop the loop, join the thread and close the loop (idempotent)."""
        if self._loop.is_closed():
            return
        if self._thread.is_alive():
            with contextlib.suppress(RuntimeError):  # the loop stopped on its own
                self.run(_cancel_the_rest())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(LOOP_STOP_TIMEOUT_S)
        if not self._thread.is_alive():
            self._loop.close()


async def _cancel_the_rest() -> None:
    """Cancel tasks still running (an abandoned subscription's fetch) and finish async
    generators, so nothing is left pending when the loop closes."""
    current = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not current]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.get_running_loop().shutdown_asyncgens()
