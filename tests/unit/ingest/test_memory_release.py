"""Arrow's pool choice and the release thread's lifecycle (glibc, as on every Linux we ship to)."""

from __future__ import annotations

import threading

import pyarrow as pa

from ingest.memory_release import MemoryRelease, malloc_trim, use_arrow_pool
from spark_log.memory_config import MemoryConfig


def _release_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "memory-release"]


def test_the_arrow_pool_is_the_one_configured():
    before = pa.default_memory_pool()
    try:
        assert use_arrow_pool("system") == "system"
        assert pa.default_memory_pool().backend_name == "system"
    finally:
        pa.set_memory_pool(before)


def test_glibc_trim_is_found_and_runs():
    trim = malloc_trim()
    assert trim is not None
    assert trim() in (0, 1)  # 1: pages were returned, 0: there were none to return


def test_the_release_thread_starts_and_stops_with_the_node():
    release = MemoryRelease(MemoryConfig(release_interval_s=0.1))
    release.start()
    try:
        assert release.active and len(_release_threads()) == 1
    finally:
        release.stop()
    assert not release.active and not _release_threads()


def test_interval_zero_starts_nothing():
    release = MemoryRelease(MemoryConfig(release_interval_s=0))
    release.start()
    assert not release.active and not _release_threads()
    release.stop()
