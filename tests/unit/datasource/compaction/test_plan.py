"""Compaction planning: boundaries, file choice, skipping clean partitions, the state commit."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from datasource.compaction.commit import state_transactions, tombstone_expiry
from datasource.compaction.errors import InvalidCompactionOptionError
from datasource.compaction.job import TombstoneCounts
from datasource.compaction.plan import plan_compaction
from datasource.compaction.settings import CompactionOptions, CompactionTarget
from spark_log.lake.compaction_state import (
    NO_TOMBSTONES,
    cleaned_app_id,
    compaction_app_id,
    tombstones_app_id,
)
from spark_log.lake.layout import app_id
from spark_log.lake.rewrite import TableFile

NOW_MS = 1_700_000_000_000
DAY_MS = 86_400_000
TARGET = CompactionTarget("s", "/lake/s@1", 3, DAY_MS)


def table_file(
    partition: int, lo: int | None, hi: int | None, records: int | None = 10
) -> TableFile:
    path = f"partition={partition}/f-{lo}-{hi}.parquet"
    return TableFile(path, "/lake/s@1/" + path, partition, 100, records, lo, hi)


@dataclass
class FakeSnapshot:
    table_files: list[TableFile]
    txns: dict[str, int] = field(default_factory=dict)
    version: int = 7

    def files(self) -> list[TableFile]:
        return self.table_files

    def transaction_version(self, app: str) -> int | None:
        return self.txns.get(app)

    def exported_offset(self, partition: int) -> int | None:
        return self.txns.get(app_id("s", partition))


def exported(**offsets: int) -> dict[str, int]:
    return {app_id("s", int(p[1:])): v for p, v in offsets.items()}


def test_default_boundary_is_the_lake_offset_and_every_file_is_read():
    files = [table_file(0, 0, 9), table_file(0, 10, 19), table_file(1, 0, 4, 5)]
    plan = plan_compaction(
        FakeSnapshot(files, exported(p0=20, p1=5)), TARGET, CompactionOptions(), NOW_MS
    )
    assert [(p.partition, p.boundary, len(p.files), p.records_before) for p in plan.partitions] == [
        (0, 20, 2, 20),
        (1, 5, 1, 5),
    ]
    assert [(s.partition, s.reason) for s in plan.skipped] == [
        (2, "nothing exported to the lake yet")
    ]
    assert plan.boundary_offset is None
    assert plan.tombstone_cutoff_ms == NOW_MS - DAY_MS
    assert plan.run_id == NOW_MS and plan.previous_run is None


def test_a_lower_boundary_reads_only_files_that_may_hold_offsets_below_it():
    files = [
        table_file(0, 0, 9),
        table_file(0, 10, 19),
        table_file(0, 20, 29),
        table_file(0, None, None, None),
    ]
    plan = plan_compaction(
        FakeSnapshot(files, exported(p0=30)),
        TARGET,
        CompactionOptions(boundary_offset=15, partitions=(0,)),
        NOW_MS,
    )
    (p,) = plan.partitions
    assert p.boundary == 15 and plan.boundary_offset == 15
    assert [f.min_offset for f in p.files] == [0, None, 10]  # sorted by first offset
    assert p.records_before is None  # a file without stats: the count is unknown


def test_a_boundary_above_the_lake_offset_is_capped():
    plan = plan_compaction(
        FakeSnapshot([table_file(0, 0, 9)], exported(p0=10)),
        TARGET,
        CompactionOptions(boundary_offset=1000, partitions=(0,)),
        NOW_MS,
    )
    assert plan.partitions[0].boundary == 10


def test_clean_partitions_are_skipped_unless_full_or_a_tombstone_is_due():
    txns = {
        **exported(p0=10, p1=10, p2=12),
        cleaned_app_id("s", 0): 10,
        cleaned_app_id("s", 1): 10,
        tombstones_app_id("s", 1): NOW_MS - 1,
        cleaned_app_id("s", 2): 10,
        compaction_app_id("s"): NOW_MS + 5,
    }
    files = [table_file(p, 0, 9) for p in range(3)]
    plan = plan_compaction(FakeSnapshot(files, txns), TARGET, CompactionOptions(), NOW_MS)
    assert [p.partition for p in plan.partitions] == [1, 2]  # 1: tombstone due, 2: new records
    assert "compacted up to offset 10" in plan.skipped[0].reason
    assert plan.run_id == NOW_MS + 6  # strictly above the last run even with a lagging clock
    full = plan_compaction(FakeSnapshot(files, txns), TARGET, CompactionOptions(full=True), NOW_MS)
    assert [p.partition for p in full.partitions] == [0, 1, 2]


def test_unknown_partitions_are_refused():
    with pytest.raises(InvalidCompactionOptionError, match="no partition"):
        plan_compaction(FakeSnapshot([]), TARGET, CompactionOptions(partitions=(3,)), NOW_MS)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"boundary_offset": -1},
        {"max_records_per_file": 0},
        {"commit_retries": -1},
        {"vacuum_retention_hours": -1},
        {"partitions": (-1,)},
        {"optimize_target_bytes": 0},
    ],
)
def test_invalid_options_are_refused(kwargs):
    with pytest.raises(InvalidCompactionOptionError):
        CompactionOptions(**kwargs)


def test_the_commit_moves_run_cleaned_offsets_and_tombstone_expiry():
    txns = {
        **exported(p0=20, p1=8),
        cleaned_app_id("s", 1): 12,
        tombstones_app_id("s", 1): NOW_MS - 5,
    }
    files = [table_file(0, 0, 19), table_file(1, 0, 7)]
    plan = plan_compaction(
        FakeSnapshot(files, txns), TARGET, CompactionOptions(full=True, partitions=(0, 1)), NOW_MS
    )
    kept = TombstoneCounts(
        removed=3, kept=2, oldest_kept_ms=NOW_MS - 1000, partitions_with_kept=frozenset({0})
    )
    assert state_transactions(plan, kept) == {
        compaction_app_id("s"): NOW_MS,
        cleaned_app_id("s", 0): 20,
        tombstones_app_id("s", 0): NOW_MS - 1000 + DAY_MS,
        cleaned_app_id("s", 1): 12,  # never lowered
        tombstones_app_id("s", 1): NOW_MS - 5,  # below the old cleaned offset: still counts
    }
    none_kept = TombstoneCounts(0, 0, None, frozenset())
    assert tombstone_expiry(plan.partitions[0], none_kept, DAY_MS) == NO_TOMBSTONES
