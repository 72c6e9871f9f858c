"""A lake store that hangs (SIGSTOP: connections accepted, never answered) fails a lake call
within the default store bounds instead of delta-rs's own retry budget of 180 s per request,
and the same table reads normally once the store answers again."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from liftlog.embedded.seaweedfs import SeaweedFsServer, create_bucket
from spark_log.errors import LakeError
from spark_log.lake import LakeTable
from tests.support.lake_stores import s3_lake

pytestmark = [pytest.mark.fault, pytest.mark.slow]

BUCKET = "hang"
BOUNDED_S = 90.0
"""The 30 s request timeout plus slack for a loaded machine; far below the 180 s retry
budget delta-rs allows each request without the bounds."""


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
