"""Freed native memory goes back to the operating system while the node runs.

Measured under ``liftlog bench``: the node's Python objects and Arrow's allocations stayed
flat while its RSS climbed by a few hundred megabytes. What grew were allocator heaps holding
pages already freed (glibc keeps them for reuse; mimalloc, Arrow's default pool, keeps its own
arenas). So Arrow is pointed at the system allocator and a thread calls glibc's
``malloc_trim`` on a timer: one heap, trimmed. The call releases the GIL (ctypes does), but
it walks each heap under that heap's lock, so an allocation on the event loop may wait for it
a moment once per interval: measured, the ack latency's p99 was no worse with it (benchmarks.md).

``pa.set_memory_pool`` sets the pool pyarrow's Python API allocates from; Arrow's C++ readers
that take the process default (IPC message readers) keep theirs. Buffers free into the pool
that made them, so switching while buffers exist is safe.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from collections.abc import Callable

import pyarrow as pa

from spark_log.memory_config import ArrowPool, MemoryConfig

log = logging.getLogger("liftlog.memory")

_POOLS: dict[ArrowPool, Callable[[], pa.MemoryPool]] = {
    "system": pa.system_memory_pool,
    "mimalloc": pa.mimalloc_memory_pool,
    "jemalloc": pa.jemalloc_memory_pool,
}


def use_arrow_pool(name: ArrowPool) -> str:
    """Make ``name`` pyarrow's default pool; returns the backend now in use. A pool this
    pyarrow build lacks leaves the default in place, with a warning, rather than failing."""
    try:
        pa.set_memory_pool(_POOLS[name]())
    except NotImplementedError:
        log.warning("pyarrow has no %s memory pool; keeping %s", name, pa.default_memory_pool())
    return str(pa.default_memory_pool().backend_name)


def malloc_trim() -> Callable[[], int] | None:
    """glibc's ``malloc_trim(0)``, or None where the C library has none (musl, macOS)."""
    trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
    if trim is None:
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: int(trim(0))


class MemoryRelease:
    """A daemon thread that returns freed heap pages every ``interval_s`` seconds."""

    def __init__(self, config: MemoryConfig) -> None:
        self._interval_s = config.release_interval_s
        self._trim = malloc_trim() if config.release_interval_s > 0 else None
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def active(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        if self._trim is None or self._thread is not None:
            return
        self._stopped.clear()
        self._thread = threading.Thread(target=self._run, name="memory-release", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stopped.set()
            thread.join()

    def _run(self) -> None:
        trim = self._trim
        while trim is not None and not self._stopped.wait(self._interval_s):
            trim()
