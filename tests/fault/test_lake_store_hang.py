"""A lake store that hangs (SIGSTOP: connections accepted, never answered) fails a lake call
within the default store bounds instead of delta-rs's own retry budget of 180 s per request,
and the same table reads normally once the store answers again."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from liftlog.embedded.seaweedfs import SeaweedFsServer, create_bucket
from spark_log.errors import LakeError
from spark_log.lake import LakeTable
from tests.support.lake_stores import s3_lake
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.fault, pytest.mark.slow]

BUCKET = "hang"
BOUNDED_S = 90.0
"""The 30 s request timeout plus slack for a loaded machine; far below the 180 s retry
budget delta-rs allows each request without the bounds."""
FREE_TICKS = 200  # ~4 s of the main thread's own polls while a read waits on the hung store


@pytest.fixture
def store(temp_dir: Path) -> Iterator[SeaweedFsServer]:
    """A store of its own: the session's shared one must not be frozen."""
    server = SeaweedFsServer(temp_dir / "seaweedfs")
    server.start()
    try:
        yield server
    finally:
        server.resume()
        server.stop()


def test_a_hung_store_fails_a_lake_call_within_the_bounds(store):
    create_bucket(store.credentials, BUCKET)
    lake = s3_lake(BUCKET, store.credentials)
    table = LakeTable(f"{lake.uri}/s@1", "s", lake.storage)
    table.ensure_exists()
    store.pause()
    try:
        started = time.monotonic()
        with pytest.raises(LakeError, match="cannot read the lake table"):
            table.snapshot()
        elapsed = time.monotonic() - started
    finally:
        store.resume()
    print(f"a hung store failed the call after {elapsed:.1f}s")
    assert elapsed < BOUNDED_S
    assert table.snapshot().exported_offset(0) is None


def test_a_table_read_waiting_on_a_hung_store_leaves_the_other_threads_running(store):
    """Finding whether a table exists (every describe asks, for its compaction state) must
    not hold the GIL while the store hangs: ``DeltaTable.is_deltatable`` did, and froze a
    node's event loop (its REST API, its acks) for the store's whole timeout."""
    create_bucket(store.credentials, BUCKET)
    lake = s3_lake(BUCKET, store.credentials)
    table = LakeTable(f"{lake.uri}/s@2", "s", lake.storage)
    table.ensure_exists()
    ticks = [0]
    store.pause()
    try:
        reader = threading.Thread(target=_quietly, args=(table.compaction_state, 1), daemon=True)
        reader.start()
        # the main thread keeps counting while the read waits on the store
        wait_for(lambda: _tick(ticks, reader) >= FREE_TICKS, BOUNDED_S, message="ticks")
        assert reader.is_alive()
    finally:
        store.resume()
    reader.join(BOUNDED_S)
    assert not reader.is_alive()


def _tick(ticks: list[int], reader: threading.Thread) -> int:
    assert reader.is_alive(), "the read ended before the store answered"
    ticks[0] += 1
    return ticks[0]


def _quietly(read: Callable[[int], object], partitions: int) -> None:
    with contextlib.suppress(LakeError):
        read(partitions)
