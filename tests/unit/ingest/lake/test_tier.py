"""The lake read tier on a real Delta table (delta-rs on local files) with offset gaps, as a
key-compacted lake has them: a range answers with ``next_offset`` at its end even when it
holds fewer rows, or none; record and byte bounds cut it; a file gone since the snapshot was
cached makes the tier read a newer snapshot."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from ingest.lake.tier import LakePartition, LakeTier
from ingest.replica.positions import FetchLimits, Stop, fetch_until_stop
from ingest.replica.read_path import FetchResult
from ingest.replica.tiered_fetch import TieredReads
from spark_log.config import LakeConfig
from spark_log.errors import OffsetOutOfRangeError
from spark_log.lake import LAKE_SCHEMA, LakeTable, range_read
from spark_log.lake.storage import LakeStorage
from spark_log.log.fetch_table import FETCH_SCHEMA, records_of_fetch_table

KEPT = [0, 1, 5, 6, 20, 21, 22, 23, 24]
"""The offsets a compaction left of [0, 30)."""
LAKE_END = 30
BASE_US = 1_700_000_000_000_000


def rows(offsets: list[int]) -> pa.Table:
    n = len(offsets)
    return pa.table(
        {
            "partition": pa.array([0] * n, pa.int32()),
            "offset": pa.array(offsets, pa.int64()),
            "timestamp": pa.array(
                [BASE_US + o * 1000 for o in offsets], pa.timestamp("us", tz="UTC")
            ),
            "key": pa.array([b"k%d" % o for o in offsets], pa.binary()),
            "value": pa.array([b"v%d" % o for o in offsets], pa.binary()),
            "headers": pa.nulls(n, LAKE_SCHEMA.field("headers").type),
            "subject": pa.array(["s"] * n, pa.string()),
        },
        schema=LAKE_SCHEMA,
    )


@pytest.fixture
def part(tmp_path: Path) -> LakePartition:
    uri = str(tmp_path / "lake" / "s@1")
    table = LakeTable(uri, "s")
    table.ensure_exists()
    table.snapshot().append(rows(KEPT), 0, LAKE_END, lambda: True, {})
    return LakePartition("s", 0, 1, uri, LakeStorage(uri))


async def offsets_from(tier: LakeTier, part: LakePartition, offset: int, n: int) -> list[int]:
    read = await tier.read(part, offset, LAKE_END, n, 1 << 20)
    return [*read.table.column("offset").to_pylist(), read.next_offset]


async def test_a_range_with_gaps_ends_at_its_end_not_after_its_last_row(part):
    tier = LakeTier()
    assert await offsets_from(tier, part, 0, 3) == [0, 1, 3]
    assert await offsets_from(tier, part, 3, 3) == [5, 6]
    assert await offsets_from(tier, part, 7, 10) == [17]  # nothing in [7, 17), still not the end
    assert await offsets_from(tier, part, 17, 100) == [20, 21, 22, 23, 24, LAKE_END]


async def test_reading_by_next_offset_returns_every_kept_offset_once(part):
    tier = LakeTier()
    offset, seen, reads = 0, [], 0
    while offset < LAKE_END:
        read = await tier.read(part, offset, LAKE_END, 4, 1 << 20)
        assert read.next_offset > offset  # never stuck on an empty range
        seen += read.table.column("offset").to_pylist()
        offset, reads = read.next_offset, reads + 1
    assert seen == KEPT and reads == 8


async def test_the_range_never_crosses_the_log_start(part):
    read = await LakeTier().read(part, 0, 6, 100, 1 << 20)
    assert read.table.column("offset").to_pylist() == [0, 1, 5]
    assert read.next_offset == 6


async def test_a_byte_bound_cuts_after_the_last_row_returned(part):
    read = await LakeTier().read(part, 0, LAKE_END, 100, 1)  # at least one row
    assert read.table.column("offset").to_pylist() == [0]
    assert read.next_offset == 1
    read = await LakeTier().read(part, 0, LAKE_END, 100, 9)  # k0v0 + k1v1 + k5v5 > 9
    assert read.table.column("offset").to_pylist() == [0, 1]
    assert read.next_offset == 2


async def test_rows_come_in_the_fetch_schema_and_as_records(part):
    read = await LakeTier().read(part, 5, LAKE_END, 1, 1 << 20)
    assert read.table.schema == FETCH_SCHEMA
    (record,) = records_of_fetch_table(read.table)
    assert (record.offset, record.key, record.value, record.subject) == (5, b"k5", b"v5", "s")
    assert record.timestamp == BASE_US // 1000 + 5 and record.headers == []


async def test_offsets_the_lake_does_not_reach_are_out_of_range(part):
    with pytest.raises(OffsetOutOfRangeError, match="not in the lake"):
        await LakeTier().read(part, LAKE_END, LAKE_END + 10, 10, 1 << 20)


async def test_first_offset_and_time_search(part):
    tier = LakeTier()
    assert await tier.first_offset(part) == 0
    assert await tier.offset_for_timestamp(part, BASE_US // 1000 + 2, LAKE_END) == 5
    assert await tier.offset_for_timestamp(part, BASE_US // 1000 + 2, 5) is None


async def test_a_file_gone_since_the_snapshot_was_cached_is_read_from_a_newer_one(part):
    tier = LakeTier(cache_bytes=0)  # no decoded row group to answer from: the file is opened
    assert await offsets_from(tier, part, 0, 2) == [0, 1, 2]  # the snapshot is cached now
    old = [Path(u.removeprefix("file://")) for u in DeltaTable(part.table_uri).file_uris()]
    # what a compaction and a vacuum leave: the rows in a new file, the old file deleted
    write_deltalake(part.table_uri, rows([5, 6, 24]), mode="overwrite")
    for path in old:
        path.unlink()
    assert await offsets_from(tier, part, 2, 10) == [5, 6, 12]


class EmptyLakeRange:
    """A fetch source whose read is an empty lake range ending at 17 (a compacted gap)."""

    log = None

    async def fetch(
        self, offset: int, max_records: int, max_bytes: int, wait_ms: int, *, arrow: bool = False
    ) -> FetchResult:
        return FetchResult([], 40, 30, FETCH_SCHEMA.empty_table() if arrow else None, 17)


@pytest.mark.parametrize("arrow", [False, True])
async def test_a_positioned_fetch_carries_the_reads_next_offset(arrow):
    limits = FetchLimits(max_records=10, max_bytes=1 << 20, wait_ms=0)
    got = await fetch_until_stop(EmptyLakeRange(), 7, Stop(), limits, arrow=arrow)
    assert (got.next_offset, got.end_reached) == (17, False)
    assert got.headers()["Liftlog-Next-Offset"] == "17"
    ended = await fetch_until_stop(EmptyLakeRange(), 7, Stop(offset=16), limits, arrow=arrow)
    assert (ended.next_offset, ended.end_reached) == (17, True)


async def test_pages_of_a_cached_row_group_open_no_file(part, monkeypatch):
    tier = LakeTier()
    assert await offsets_from(tier, part, 0, 2) == [0, 1, 2]
    opened: list[str] = []
    real_open = range_read.open_file
    monkeypatch.setattr(range_read, "open_file", lambda *a: opened.append(a[0]) or real_open(*a))
    assert await offsets_from(tier, part, 2, 20) == [5, 6, 20, 21, 22]
    assert opened == []


class OvertakenReplica:
    """A replica whose local read loses a race with retention: the log start moves past the
    offset between the routing check and the read."""

    def __init__(self, uri: str) -> None:
        self.log = SimpleNamespace(log_start_offset=20, high_watermark=40)
        self.lake_table_uri = uri
        self.spec = SimpleNamespace(name="s", partitions=1, encryption=False)
        self.partition = 0
        self.config = SimpleNamespace(lake=LakeConfig(uri=str(Path(uri).parent)))
        self.cipher = None
        self.schemas = None
        self.reads = LogStartReads(self.log)
        self.local_reads = 0

    async def fetch(self, offset: int, *_args: object, **_kwargs: object) -> FetchResult:
        self.local_reads += 1
        self.log.log_start_offset = 30
        raise OffsetOutOfRangeError(f"offset {offset} is below the log start")


class LogStartReads:
    """A read path whose time search always finds the log's first record."""

    def __init__(self, log: SimpleNamespace) -> None:
        self._log = log

    async def offset_for_timestamp(self, timestamp_ms: int) -> int:
        return self._log.log_start_offset


async def test_a_local_read_overtaken_by_retention_is_served_from_the_lake(part):
    replica = OvertakenReplica(part.table_uri)
    reads = TieredReads(replica, LakeTier())  # type: ignore[arg-type]
    got = await reads.fetch(22, 100, 1 << 20, 0, arrow=True)
    assert replica.local_reads == 1
    assert got.table is not None and got.table.column("offset").to_pylist() == [22, 23, 24]
    assert (got.next_offset, got.log_start_offset) == (30, 30)  # the lake stops at the log start
    records = await reads.fetch(0, 3, 1 << 20, 0)
    assert [r.offset for r in records.records] == [0, 1] and records.next_offset == 3


async def test_earliest_and_time_search_reach_into_the_lake(part):
    replica = OvertakenReplica(part.table_uri)
    reads = TieredReads(replica, LakeTier())  # type: ignore[arg-type]
    assert await reads.earliest_offset() == 0
    assert await reads.offset_for_timestamp(BASE_US // 1000 + 2) == 5
    assert await reads.offset_for_timestamp(BASE_US // 1000 + 25) == 20  # none in the lake
