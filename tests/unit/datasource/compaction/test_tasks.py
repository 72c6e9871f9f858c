"""The pyarrow work of the compaction job's tasks, on real Parquet files in a local table
directory (no Spark: the functions are called as Spark calls them)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from datasource.compaction.output import COMPACTED_PREFIX
from datasource.compaction.tasks import (
    NO_WINNER,
    KeyScan,
    LakeAccess,
    PartitionRewrite,
    rewrite_partition,
    scan_keys,
)
from spark_log.lake.layout import FILE_SCHEMA
from spark_log.lake.storage import LakeStorage

NOW_MS = 1_700_000_000_000
OLD_MS = NOW_MS - 10_000
RUN = 42


def lake_file(root: Path, name: str, rows: list[tuple[int, str | None, str, int]]) -> str:
    """A lake file of partition 0: rows of (offset, key, value, timestamp ms)."""
    table = pa.table(
        {
            "offset": pa.array([r[0] for r in rows], pa.int64()),
            "timestamp": pa.array([r[3] * 1000 for r in rows], pa.timestamp("us", tz="UTC")),
            "key": pa.array([None if r[1] is None else r[1].encode() for r in rows], pa.binary()),
            "value": pa.array([r[2].encode() for r in rows], pa.binary()),
            "headers": pa.nulls(len(rows), FILE_SCHEMA.field("headers").type),
            "subject": pa.array(["s"] * len(rows), pa.string()),
        },
        schema=FILE_SCHEMA,
    )
    path = root / "partition=0" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return str(path)


def test_the_key_scan_emits_keyed_rows_below_the_boundary(tmp_path):
    location = lake_file(
        tmp_path,
        "a.parquet",
        [(0, "k", "1", NOW_MS), (1, None, "x", NOW_MS), (2, "k", "2", NOW_MS)],
    )
    scan = KeyScan(LakeAccess.of(LakeStorage(str(tmp_path))), ((location, 0),), boundary_offset=2)
    (batch,) = scan_keys(scan, iter([pa.record_batch({"id": [0]})]))
    assert batch.to_pylist() == [{"partition": 0, "key": b"k", "offset": 0}]


def test_a_partition_rewrite_keeps_winners_keyless_rows_and_fresh_tombstones(tmp_path):
    first = lake_file(
        tmp_path,
        "a.parquet",
        [(0, "k1", "a", NOW_MS), (1, None, "", NOW_MS), (2, "k2", "", OLD_MS)],
    )
    second = lake_file(tmp_path, "b.parquet", [(3, "k1", "b", NOW_MS), (4, "k3", "", NOW_MS)])
    spec = PartitionRewrite(
        LakeAccess.of(LakeStorage(str(tmp_path))),
        {0: (first, second)},
        boundary_offset=None,
        tombstone_cutoff_ms=NOW_MS - 1,
        run_id=RUN,
        max_records_per_file=2,
    )
    winners = pa.table({"partition": [0, 0, 0, 0], "offset": [3, 2, 4, NO_WINNER]})

    out = rewrite_partition(spec, (pa.scalar(0),), winners).to_pylist()

    files, (summary,) = out[:-1], out[-1:]
    assert (summary["rows_in"], summary["rows_out"]) == (5, 3)  # k1's 0 and k2's old tombstone go
    assert (summary["tombstones_removed"], summary["tombstones_kept"]) == (1, 1)
    assert summary["oldest_kept_ms"] == NOW_MS
    assert [f["path"].startswith(f"partition=0/{COMPACTED_PREFIX}{RUN}-") for f in files] == [
        True,
        True,
    ]  # split at two records per file
    kept = [
        r
        for f in files
        for r in pq.read_table(tmp_path / f["path"]).select(["offset"]).column(0).to_pylist()
    ]
    assert kept == [1, 3, 4]
    stats = [json.loads(f["stats_json"]) for f in files]
    assert [
        (s["numRecords"], s["minValues"]["offset"], s["maxValues"]["offset"]) for s in stats
    ] == [
        (2, 1, 3),
        (1, 4, 4),
    ]
    assert all(f["size_bytes"] == (tmp_path / f["path"]).stat().st_size for f in files)


def test_a_partition_that_loses_nothing_leaves_no_file_behind(tmp_path):
    only = lake_file(tmp_path, "a.parquet", [(0, "k1", "a", NOW_MS), (1, None, "x", NOW_MS)])
    spec = PartitionRewrite(
        LakeAccess.of(LakeStorage(str(tmp_path))), {0: (only,)}, None, NOW_MS, RUN, 100
    )
    (summary,) = rewrite_partition(
        spec, (pa.scalar(0),), pa.table({"partition": [0], "offset": [0]})
    ).to_pylist()
    assert (summary["rows_in"], summary["rows_out"], summary["path"]) == (2, 2, None)
    assert sorted(p.name for p in (tmp_path / "partition=0").iterdir()) == ["a.parquet"]
