"""One asyncio event loop on a background daemon thread, for callers that are not async.

Scripts and notebooks want plain calls; the client is async. Running every call on one
long-lived loop (instead of ``asyncio.run`` per call) keeps the NATS connection, its ack
subscription and cached stream specs alive between calls.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from spark_log.errors import LiftlogError, UnavailableError

T = TypeVar("T")

LOOP_STOP_TIMEOUT_S = 10.0


class LoopReentryError(LiftlogError, RuntimeError):
    """A blocking call was made from the loop's own thread (it would wait on itself forever);
    code running on the loop must ``await`` the coroutine instead."""

    code = "loop_reentry"


class LoopThread:
    """Owns the loop and its thread; ``run`` blocks the caller until a coroutine finishes.

    ``run`` and ``stop`` may race from different threads: a lock orders the submit against the
    close, and every call still waiting when ``stop`` runs fails with ``UnavailableError``."""

    def __init__(self, name: str = "liftlog-loop") -> None:
        self._loop = asyncio.new_event_loop()
        self._lock = threading.Lock()
        self._closed = False
        # the calls in flight, of every result type (a Future's type parameter is invariant)
        self._pending: set[concurrent.futures.Future[Any]] = set()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    @property
    def running(self) -> bool:
        return not self._closed and self._thread.is_alive() and not self._loop.is_closed()

    def _refuse_reentry(self, what: str) -> None:
        if threading.current_thread() is self._thread:
            raise LoopReentryError(f"{what} called from the client's own event loop thread")

    def run(self, coro: Coroutine[Any, Any, T]) -> T:  # asyncio types yield and send as Any
        """Run ``coro`` on the loop and return its result (or raise its error). A
        KeyboardInterrupt in the caller cancels the coroutine too. Raises UnavailableError
        when the loop is stopped (before or while the call runs), LoopReentryError when called
        from the loop thread itself."""
        try:
            self._refuse_reentry("run()")
        except LoopReentryError:
            coro.close()
            raise
        with self._lock:
            if not self.running:
                coro.close()
                raise UnavailableError("the client is closed")
            future = asyncio.run_coroutine_threadsafe(coro, self._loop)
            self._pending.add(future)
        try:
            return future.result()
        except (concurrent.futures.CancelledError, asyncio.CancelledError) as exc:
            if self._closed:
                raise UnavailableError("the client was closed while the call ran") from exc
            raise
        except BaseException:
            future.cancel()
            raise
        finally:
            with self._lock:
                self._pending.discard(future)

    def stop(self) -> None:
        """Stop the loop, join the thread and close the loop (idempotent). Calls still
        waiting fail with UnavailableError."""
        self._refuse_reentry("stop()")
        with self._lock:
            if self._closed:
                return
            self._closed = True
            pending = list(self._pending)
        if self._thread.is_alive() and not self._loop.is_closed():
            try:
                cancel = asyncio.run_coroutine_threadsafe(_cancel_the_rest(), self._loop)
                cancel.result(LOOP_STOP_TIMEOUT_S)
            except (RuntimeError, concurrent.futures.TimeoutError):
                pass  # the loop stopped on its own, or a task ignores cancellation
            with contextlib.suppress(RuntimeError):  # the loop stopped on its own
                self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(LOOP_STOP_TIMEOUT_S)
        for future in pending:
            if not future.done():
                with contextlib.suppress(concurrent.futures.InvalidStateError):  # it finished
                    future.set_exception(UnavailableError("the client was closed"))
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
