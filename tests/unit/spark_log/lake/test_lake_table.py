"""The Delta adapter on real Delta tables (delta-rs on local files): the app-transaction
compare-and-set that makes export gap-free and non-overlapping, and what delta-rs does when two
exporters race."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from spark_log.errors import LakeError, NotLeaderError
from spark_log.lake import LAKE_SCHEMA, LakeCommitConflictError, LakeTable, app_id


def rows(partition: int, start: int, end: int) -> pa.Table:
    n = end - start
    return pa.table(
        {
            "partition": pa.array([partition] * n, pa.int32()),
            "offset": pa.array(range(start, end), pa.int64()),
            "timestamp": pa.array(
                [1_700_000_000_000_000 + o for o in range(start, end)], pa.timestamp("us", tz="UTC")
            ),
            "key": pa.array([None] * n, pa.binary()),
            "value": pa.array([b"v%d" % o for o in range(start, end)], pa.binary()),
            "headers": pa.nulls(n, LAKE_SCHEMA.field("headers").type),
            "subject": pa.array(["s"] * n, pa.string()),
        },
        schema=LAKE_SCHEMA,
    )


def allowed() -> bool:
    return True


@pytest.fixture
def table(tmp_path) -> LakeTable:
    table = LakeTable(str(tmp_path / "lake" / "s@1"), "s")
    table.ensure_exists()
    return table


def test_a_new_table_has_the_lake_schema_and_no_offsets(table):
    table.ensure_exists()  # idempotent
    dt = DeltaTable(table.uri)
    assert dt.metadata().partition_columns == ["partition"]
    assert [f.name for f in dt.schema().fields] == LAKE_SCHEMA.names
    assert table.exported_offsets(2) == {0: None, 1: None}


def test_an_append_moves_the_partitions_version_to_its_end(table):
    snapshot = table.snapshot()
    snapshot.append(rows(0, 0, 5), 0, 5, allowed, {"start_offset": 0})
    assert table.exported_offsets(2) == {0: 5, 1: None}
    dt = DeltaTable(table.uri)
    assert dt.transaction_version(app_id("s", 0)) == 5
    assert dt.history(1)[0]["liftlog"] == {"start_offset": 0}
    assert sorted(dt.to_pyarrow_table().column("offset").to_pylist()) == list(range(5))


def test_a_concurrent_commit_of_the_same_partition_makes_the_stale_one_fail(table):
    """delta-rs's conflict checker rejects a commit whose snapshot predates another commit
    carrying a txn of the same app id: two leaders cannot both export one range."""
    stale = table.snapshot()
    fresh = table.snapshot()
    fresh.append(rows(0, 0, 5), 0, 5, allowed, {})
    with pytest.raises(LakeCommitConflictError, match="Concurrent transaction"):
        stale.append(rows(0, 0, 5), 0, 5, allowed, {})
    assert table.exported_offsets(1) == {0: 5}
    assert DeltaTable(table.uri).to_pyarrow_table().num_rows == 5


def test_commits_of_other_partitions_do_not_conflict(table):
    stale = table.snapshot()
    table.snapshot().append(rows(1, 0, 3), 1, 3, allowed, {})
    table.snapshot().append(rows(2, 0, 4), 2, 4, allowed, {})
    stale.append(rows(0, 0, 5), 0, 5, allowed, {})  # retried at the next version
    assert table.exported_offsets(3) == {0: 5, 1: 3, 2: 4}


def test_a_deposed_exporter_stops_before_the_commit(table):
    with pytest.raises(NotLeaderError):
        table.snapshot().append(rows(0, 0, 5), 0, 5, lambda: False, {})
    assert table.exported_offsets(1) == {0: None}
    assert DeltaTable(table.uri).version() == 0


def test_deltalake_errors_become_lake_errors(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(LakeError):
        LakeTable(str(blocker / "lake" / "s@1"), "s").ensure_exists()
    with pytest.raises(LakeError):
        LakeTable(str(tmp_path / "missing"), "s").snapshot()


def test_first_offsets_are_the_smallest_offset_each_partitions_files_hold(table):
    assert table.first_offsets(2) == {0: None, 1: None}
    table.snapshot().append(rows(0, 7, 12), 0, 12, allowed, {})
    table.snapshot().append(rows(0, 12, 15), 0, 15, allowed, {})
    table.snapshot().append(rows(1, 3, 4), 1, 4, allowed, {})
    assert table.first_offsets(3) == {0: 7, 1: 3, 2: None}
