"""Committed reads: bounded by the HW, out-of-range offsets refused, long polls woken by the HW."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from ingest.metrics import NodeMetrics
from ingest.replica.read_path import ReadPath
from spark_log.config import LogConfig
from spark_log.errors import OffsetOutOfRangeError
from spark_log.log import PartitionLog, build_record_batch, encode_batch
from tests.support.waiting import one_loop_turn
from tests.unit.ingest.conftest import ManualClock

LONG_POLL_MS = 10_000


@pytest.fixture
def log(tmp_path: Path, clock: ManualClock) -> Iterator[PartitionLog]:
    opened = PartitionLog.open(tmp_path / "p0", LogConfig(), now_ms=clock.now_ms)
    values = [f"v{i}".encode() for i in range(5)]
    rb = build_record_batch([clock.now_ms()] * 5, [None] * 5, values, [None] * 5, ["s"] * 5)
    opened.append_many([encode_batch(0, 0, rb)])
    opened.set_high_watermark(3)
    yield opened
    opened.close()


async def test_reads_stop_at_the_high_watermark(log: PartitionLog):
    reads = ReadPath("s/0", lambda: log, NodeMetrics())
    result = await reads.fetch(0, 100, 1 << 20, 0)
    assert [r.value for r in result.records] == [b"v0", b"v1", b"v2"]
    assert (result.high_watermark, result.log_start_offset) == (3, 0)
    table = (await reads.fetch(1, 100, 1 << 20, 0, arrow=True)).table
    assert table is not None and table.column("offset").to_pylist() == [1, 2]
    assert (await reads.fetch(3, 100, 1 << 20, 0)).records == []
    with pytest.raises(OffsetOutOfRangeError):
        await reads.fetch(6, 100, 1 << 20, 0)
    assert await reads.offset_for_timestamp(0) == 0


async def test_a_long_poll_returns_when_the_high_watermark_moves(log: PartitionLog):
    reads = ReadPath("s/0", lambda: log, NodeMetrics())
    poll = asyncio.ensure_future(reads.fetch(3, 100, 1 << 20, LONG_POLL_MS))
    await one_loop_turn()  # the poll starts waiting
    assert not poll.done()
    log.set_high_watermark(5)
    reads.signal_high_watermark()
    result = await asyncio.wait_for(poll, LONG_POLL_MS / 1000)
    assert [r.value for r in result.records] == [b"v3", b"v4"]


class CountingLog:
    """The log, counting its reads (what woken readers share)."""

    def __init__(self, log: PartitionLog) -> None:
        self._log = log
        self.reads = 0

    def __getattr__(self, name: str) -> object:
        return getattr(self._log, name)

    def read(self, *args: int) -> bytes:
        self.reads += 1
        return self._log.read(*args)


async def test_readers_woken_by_one_move_share_one_read(log: PartitionLog):
    counting = CountingLog(log)
    reads = ReadPath("s/0", lambda: counting, NodeMetrics())
    polls = [asyncio.ensure_future(reads.fetch(3, 100, 1 << 20, LONG_POLL_MS)) for _ in range(50)]
    other = asyncio.ensure_future(reads.fetch(3, 1, 1 << 20, LONG_POLL_MS))  # asks for less
    await one_loop_turn()
    polls[0].cancel()  # a reader that goes away does not cancel the read of the others
    log.set_high_watermark(5)
    reads.signal_high_watermark()
    results = await asyncio.wait_for(asyncio.gather(*polls[1:]), LONG_POLL_MS / 1000)
    assert all([r.value for r in res.records] == [b"v3", b"v4"] for res in results)
    assert [r.value for r in (await other).records] == [b"v3"]
    assert counting.reads == 2  # one per distinct request, not one per reader
    await reads.fetch(3, 100, 1 << 20, 0)  # a reader that did not wait reads for itself
    assert counting.reads == 3
