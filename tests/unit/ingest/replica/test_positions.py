"""A fetch's start and stop positions on a real partition log: named starts resolve against
the HW, a stop offset is inclusive, a stop timestamp cuts before the first later record, and
``end_reached`` says so in both the JSON (records) and the Arrow (table) forms."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from ingest.metrics import NodeMetrics
from ingest.replica.positions import (
    FetchLimits,
    Stop,
    check_start_choice,
    cut_table,
    fetch_until_stop,
    named_start_offset,
)
from ingest.replica.read_path import FetchResult, ReadPath
from spark_log.config import LogConfig
from spark_log.errors import InvalidRequestError
from spark_log.log import PartitionLog, build_record_batch, encode_batch

STAMPS = [1000, 1000, 2000, 3000, 3000]
LIMITS = FetchLimits(max_records=100, max_bytes=1 << 20, wait_ms=0)


class LogReplica:
    """The two things a positioned fetch asks of a replica, over a real log and read path."""

    def __init__(self, log: PartitionLog) -> None:
        self.log = log
        self._reads = ReadPath("s/0", lambda: log, NodeMetrics())

    async def fetch(
        self, offset: int, max_records: int, max_bytes: int, wait_ms: int, *, arrow: bool = False
    ) -> FetchResult:
        return await self._reads.fetch(offset, max_records, max_bytes, wait_ms, arrow=arrow)


def _open(path: Path, stamps: list[int]) -> PartitionLog:
    log = PartitionLog.open(path, LogConfig(), now_ms=lambda: 0)
    if stamps:
        n = len(stamps)
        values = [f"v{i}".encode() for i in range(n)]
        rb = build_record_batch(stamps, [None] * n, values, [None] * n, ["s"] * n)
        log.append_many([encode_batch(0, 0, rb)])
        log.set_high_watermark(n)
    return log


@pytest.fixture
def log(tmp_path: Path) -> Iterator[PartitionLog]:
    opened = _open(tmp_path / "p0", STAMPS)
    yield opened
    opened.close()


def test_named_starts_resolve_against_the_high_watermark(log: PartitionLog, tmp_path: Path):
    assert named_start_offset(log, "earliest") == 0
    assert named_start_offset(log, "latest") == 4  # the last committed record, inclusive
    assert named_start_offset(log, "new-only") == 5
    empty = _open(tmp_path / "empty", [])
    try:  # nothing committed: latest is new-only
        assert named_start_offset(empty, "latest") == named_start_offset(empty, "new-only") == 0
    finally:
        empty.close()
    with pytest.raises(InvalidRequestError, match="start must be one of"):
        named_start_offset(log, "newest")


def test_one_start_at_a_time():
    check_start_choice(3, None, None)
    check_start_choice(None, None, "latest")
    with pytest.raises(InvalidRequestError, match="offset, start"):
        check_start_choice(3, None, "latest")


@pytest.mark.parametrize("arrow", [False, True])
async def test_a_stop_offset_is_inclusive_and_ends_the_read(log: PartitionLog, arrow: bool):
    replica = LogReplica(log)
    got = await fetch_until_stop(replica, 1, Stop(offset=2), LIMITS, arrow=arrow)
    assert _offsets(got.records, got.table, arrow) == [1, 2]
    assert (got.next_offset, got.end_reached) == (3, True)
    before = await fetch_until_stop(replica, 0, Stop(offset=4), LIMITS, arrow=arrow)
    assert _offsets(before.records, before.table, arrow) == [0, 1, 2, 3, 4]
    assert before.end_reached is True
    open_ended = await fetch_until_stop(replica, 0, Stop(offset=9), LIMITS, arrow=arrow)
    assert (open_ended.next_offset, open_ended.end_reached) == (5, False)


async def test_a_read_past_the_stop_answers_at_once_without_records(log: PartitionLog):
    replica = LogReplica(log)
    limits = FetchLimits(100, 1 << 20, wait_ms=60_000)  # would long-poll at the HW
    got = await fetch_until_stop(replica, 5, Stop(offset=3), limits, arrow=False)
    assert (got.records, got.next_offset, got.end_reached) == ([], 5, True)
    assert got.headers()["Liftlog-End-Reached"] == "true"


@pytest.mark.parametrize("arrow", [False, True])
async def test_a_stop_timestamp_cuts_before_the_first_later_record(log: PartitionLog, arrow: bool):
    replica = LogReplica(log)
    got = await fetch_until_stop(replica, 0, Stop(timestamp_ms=2000), LIMITS, arrow=arrow)
    assert _offsets(got.records, got.table, arrow) == [0, 1, 2]
    assert (got.next_offset, got.end_reached) == (3, True)
    assert got.headers() == {
        "Liftlog-High-Watermark": "5",
        "Liftlog-Next-Offset": "3",
        "Liftlog-End-Reached": "true",
    }
    at_cut = await fetch_until_stop(replica, 3, Stop(timestamp_ms=2000), LIMITS, arrow=arrow)
    assert _offsets(at_cut.records, at_cut.table, arrow) == []
    assert (at_cut.next_offset, at_cut.end_reached) == (3, True)
    later = await fetch_until_stop(replica, 0, Stop(timestamp_ms=5000), LIMITS, arrow=arrow)
    assert (later.next_offset, later.end_reached) == (5, False)  # may still come: wait on


def test_cutting_nothing_keeps_the_table():
    assert cut_table(None, Stop(timestamp_ms=1)) == (None, False)
    table = pa.table({"timestamp": pa.array([1, 2], pa.timestamp("ms", tz="UTC"))})
    assert cut_table(table, Stop()) == (table, False)
    assert cut_table(table, Stop(timestamp_ms=1))[0].num_rows == 1


def _offsets(records: list, table: pa.Table | None, arrow: bool) -> list[int]:
    if not arrow:
        return [r.offset for r in records]
    return [] if table is None else table.column("offset").to_pylist()
