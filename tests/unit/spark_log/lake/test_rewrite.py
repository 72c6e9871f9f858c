"""The compaction commit on real Delta tables (delta-rs on local files): remove + add in one
commit, racing exports (no conflict, nothing lost), racing compactions and packing (one wins),
and a remover outside Liftlog noticed before committing."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from deltalake import CommitProperties, DeltaTable, Transaction

from spark_log.lake import LakeCommitConflictError, LakeTable, app_id
from spark_log.lake.compaction_state import compaction_app_id
from spark_log.lake.file_stats import parquet_stats_json
from spark_log.lake.new_file import NewFile
from spark_log.lake.packing import pack_small_files, plan_runs
from spark_log.lake.rewrite import RewriteSnapshot, TableFile, changed_since
from spark_log.lake.storage import LakeStorage
from tests.unit.spark_log.lake.test_lake_table import allowed, rows

APP = compaction_app_id("s")


@pytest.fixture
def table(tmp_path) -> LakeTable:
    table = LakeTable(str(tmp_path / "lake" / "s@1"), "s")
    table.ensure_exists()
    for start in range(0, 30, 10):  # three exports of partition 0
        table.snapshot().append(rows(0, start, start + 10), 0, start + 10, allowed, {})
    return table


def compacted_file(uri: str, name: str, offsets: range) -> NewFile:
    """A file as a compaction writes it: partition=0/, no partition column, footer stats."""
    data = rows(0, offsets.start, offsets.stop).drop_columns(["partition"])
    relative = f"partition=0/{name}.parquet"
    path = Path(uri) / relative
    pq.write_table(data, path)
    return NewFile(
        relative,
        0,
        path.stat().st_size,
        int(path.stat().st_mtime * 1000),
        parquet_stats_json(pq.ParquetFile(path).metadata),
    )


def offsets(uri: str) -> list[int]:
    dt = DeltaTable(uri)
    return sorted(o for f in dt.file_uris() for o in pq.read_table(f).column("offset").to_pylist())


def test_one_commit_replaces_the_files_read_and_keeps_later_exports(table):
    snapshot = RewriteSnapshot.open(LakeStorage(table.uri), "s")
    read = snapshot.files()
    assert [f.records for f in read] == [10, 10, 10] and snapshot.exported_offset(0) == 30
    table.snapshot().append(rows(0, 30, 35), 0, 35, allowed, {})  # an export lands meanwhile
    new = compacted_file(table.uri, "c1", range(25, 30))
    version = snapshot.commit_replace(read, [new], {APP: 1}, {"liftlog.compaction": {"run": 1}})
    assert version == DeltaTable(table.uri).version()
    assert offsets(table.uri) == list(range(25, 35))
    dt = DeltaTable(table.uri)
    assert dt.transaction_version(app_id("s", 0)) == 35 and dt.transaction_version(APP) == 1
    table.snapshot().append(rows(0, 35, 40), 0, 40, allowed, {})  # and exports go on after it
    assert offsets(table.uri) == list(range(25, 40))


def test_two_compactions_of_one_snapshot_cannot_both_commit(table):
    first = RewriteSnapshot.open(LakeStorage(table.uri), "s")
    second = RewriteSnapshot.open(LakeStorage(table.uri), "s")
    files = first.files()
    first.commit_replace(files, [compacted_file(table.uri, "a", range(20, 30))], {APP: 1}, {})
    with pytest.raises(LakeCommitConflictError):
        second.commit_replace(files, [compacted_file(table.uri, "b", range(20, 30))], {APP: 1}, {})
    assert offsets(table.uri) == list(range(20, 30))  # no duplicates


def test_packing_small_files_fences_a_compaction_that_read_them(table):
    stale = RewriteSnapshot.open(LakeStorage(table.uri), "s")
    outcome = pack_small_files(LakeStorage(table.uri), "s", 1 << 20, 5)
    assert (outcome.files_removed, outcome.files_added) == (3, 1)
    dt = DeltaTable(table.uri)
    assert dt.transaction_version(APP) == 5 and dt.transaction_version(app_id("s", 0)) == 30
    (packed,) = RewriteSnapshot.open(LakeStorage(table.uri), "s").files()
    assert (packed.records, packed.min_offset, packed.max_offset) == (30, 0, 29)
    assert (
        changed_since(LakeStorage(table.uri), APP, None, [f.path for f in stale.files()])
        is not None
    )
    with pytest.raises(LakeCommitConflictError):
        stale.commit_replace(
            stale.files(), [compacted_file(table.uri, "c", range(29, 30))], {APP: 1}, {}
        )
    assert offsets(table.uri) == list(range(30))
    assert pack_small_files(LakeStorage(table.uri), "s", 1 << 20, 6).table_version is None


def test_delta_rs_optimize_still_drops_app_transactions(table):
    """Why packing does not use delta-rs's optimize: a stale compaction would commit after it
    and duplicate rows. If this starts failing, delta-rs carries app transactions now."""
    stale = RewriteSnapshot.open(LakeStorage(table.uri), "s")
    dt = DeltaTable(table.uri)
    dt.optimize.compact(commit_properties=CommitProperties(app_transactions=[Transaction(APP, 5)]))
    assert DeltaTable(table.uri).transaction_version(APP) is None
    stale.commit_replace(
        stale.files(), [compacted_file(table.uri, "c", range(29, 30))], {APP: 1}, {}
    )
    assert offsets(table.uri) == [*range(30), 29]  # the duplicate the fence exists to prevent


def test_a_file_removed_outside_liftlog_is_noticed_before_committing(table):
    snapshot = RewriteSnapshot.open(LakeStorage(table.uri), "s")
    paths = [f.path for f in snapshot.files()]
    assert changed_since(LakeStorage(table.uri), APP, None, paths) is None
    DeltaTable(table.uri).optimize.compact()  # no app transaction: only the re-check sees it
    assert "removed meanwhile" in (changed_since(LakeStorage(table.uri), APP, None, paths) or "")


def test_runs_are_consecutive_small_files_of_one_partition_up_to_the_target():
    def f(partition: int, lo: int, size: int) -> TableFile:
        return TableFile(f"p{partition}-{lo}", "", partition, size, 1, lo, lo)

    files = [
        f(0, 0, 40),
        f(0, 1, 40),
        f(0, 2, 40),
        f(0, 3, 500),
        f(0, 4, 10),
        f(1, 0, 10),
        f(1, 1, 10),
        f(2, 0, 10),
    ]
    runs = plan_runs(files, 100)
    assert [[x.path for x in r] for r in runs] == [["p0-0", "p0-1"], ["p1-0", "p1-1"]]
