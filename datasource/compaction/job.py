"""The Spark part of a compaction: Spark decides which rows survive and runs the tasks that
read and write the lake files; the files themselves are opened only by pyarrow inside those
tasks (``tasks.py``), through the lake's filesystem, so the job runs on ``s3://``, ``gs://``,
``abfss://`` and local lakes alike, with no Hadoop connector.

The plan:

1. **Key scan.** One task per file (up to a bound), ``mapInArrow`` over ``spark.range``:
   ``(partition, key, offset)`` of the keyed rows below the boundary, two narrow columns.
2. **Winners.** A hash aggregation of ``max(offset)`` per ``(partition, key)``: the latest
   record of each key. Offsets are unique within a partition, so ``(partition, offset)``
   names exactly one row. Only two integers per key cross this shuffle, never whole rows.
3. **Rewrite.** The winners, plus one marker row per computed partition, are range-
   partitioned by ``partition`` (one task per lake partition) and handed to
   ``rewrite_partition`` (``applyInArrow``): it streams the partition's files in offset order,
   keeps keyless rows, rows at or above the boundary and the winners (less tombstones past
   the delete retention), and writes them into ``partition=<p>/`` as files of increasing,
   non-overlapping offset ranges, split at ``max_records_per_file``. Whole rows are read
   once, in that task, and never enter Spark.

The driver collects one row per file written (with its Delta statistics) and one summary row
per partition (rows in and out, tombstones removed and kept): no extra pass over the data.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention
from pyspark.sql.pandas.types import from_arrow_schema

from datasource.compaction.errors import CompactionError
from datasource.compaction.plan import CompactionPlan
from datasource.compaction.tasks import (
    KEY_SCHEMA,
    NO_WINNER,
    REWRITE_SCHEMA,
    KeyScan,
    LakeAccess,
    PartitionRewrite,
    rewrite_partition,
    scan_keys,
)
from spark_log.lake.layout import FILE_SCHEMA, PARTITION_COLUMN
from spark_log.lake.new_file import NewFile
from spark_log.lake.storage import LakeStorage

SCAN_TASKS_PER_CORE = 4
"""Key-scan tasks per core (at most one per file): enough to even out files of unequal size."""
SPARK_KEY_SCHEMA = from_arrow_schema(KEY_SCHEMA)
SPARK_REWRITE_SCHEMA = from_arrow_schema(REWRITE_SCHEMA)
WINNER_COLUMNS = (PARTITION_COLUMN, "offset")
MARKER_SCHEMA = f"{PARTITION_COLUMN} int, offset bigint"


@dataclass(frozen=True)
class TombstoneCounts:
    """What the rewrite tasks observed about tombstones (no extra pass over the data)."""

    removed: int
    kept: int
    oldest_kept_ms: int | None
    partitions_with_kept: frozenset[int]


@dataclass(frozen=True)
class PartitionOutput:
    """What the rewrite of one partition did: rows in and out and the files it left (none
    when it dropped no row: then it deleted what it wrote)."""

    partition: int
    rows_in: int
    rows_out: int
    files: tuple[NewFile, ...] = ()


@dataclass(frozen=True)
class JobOutput:
    partitions: dict[int, PartitionOutput] = field(default_factory=dict)
    tombstones: TombstoneCounts = TombstoneCounts(0, 0, None, frozenset())


def run_compaction_job(
    spark: SparkSession,
    plan: CompactionPlan,
    storage: LakeStorage,
    max_records_per_file: int,
    file_schema: pa.Schema = FILE_SCHEMA,
) -> JobOutput:
    """Run the job for ``plan`` on the table at ``storage``; collect what the tasks wrote
    (in ``file_schema``, the table's file columns: a typed table's own)."""
    lake = LakeAccess.of(storage)
    # Range partitioning samples its input in a job of its own: cached, the key scan and the
    # aggregation run once, not twice (the winners are two integers per key).
    winners = _winners(spark, plan, lake).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        rewrite = PartitionRewrite(
            lake=lake,
            files={p.partition: tuple(f.location for f in p.files) for p in plan.partitions},
            boundary_offset=plan.boundary_offset,
            tombstone_cutoff_ms=plan.tombstone_cutoff_ms,
            run_id=plan.run_id,
            max_records_per_file=max_records_per_file,
            keys=plan.target.file_keys(),
            file_schema=file_schema,
        )
        rows = (
            winners.unionByName(_markers(spark, plan))
            .repartitionByRange(len(plan.partitions), PARTITION_COLUMN)
            .groupBy(PARTITION_COLUMN)
            .applyInArrow(_rewrite_udf(rewrite), SPARK_REWRITE_SCHEMA)
            .collect()
        )
    finally:
        winners.unpersist()
    return job_output(rows, [p.partition for p in plan.partitions])


def _winners(spark: SparkSession, plan: CompactionPlan, lake: LakeAccess) -> DataFrame:
    """``(partition, offset)`` of the latest row of each key below the boundary."""
    files = plan.files
    scan = KeyScan(lake, tuple((f.location, f.partition) for f in files), plan.boundary_offset)
    tasks = max(1, min(len(files), spark.sparkContext.defaultParallelism * SCAN_TASKS_PER_CORE))
    keys = spark.range(0, len(files), 1, tasks).mapInArrow(
        functools.partial(scan_keys, scan), SPARK_KEY_SCHEMA
    )
    return (
        keys.groupBy(PARTITION_COLUMN, "key")
        .agg(F.max("offset").alias("offset"))
        .select(*WINNER_COLUMNS)
    )


def _rewrite_udf(spec: PartitionRewrite) -> Callable[[tuple[pa.Scalar, ...], pa.Table], pa.Table]:
    """The ``applyInArrow`` function: deliberately without type hints (and not a
    ``functools.partial``), so PySpark takes it as the plain ``(key, table) -> table`` form;
    its hint inference fails on partials (pyspark 4.3)."""

    def rewrite(key, table):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202
        return rewrite_partition(spec, key, table)

    return rewrite


def _markers(spark: SparkSession, plan: CompactionPlan) -> DataFrame:
    """One row per computed partition, so every one gets its rewrite task."""
    rows = [(p.partition, NO_WINNER) for p in plan.partitions]
    return spark.createDataFrame(rows, MARKER_SCHEMA)


def job_output(rows: Sequence[Row], partitions: Sequence[int]) -> JobOutput:
    """The tasks' rows as per-partition outputs and tombstone counts (pure)."""
    files: dict[int, list[NewFile]] = {}
    summaries: dict[int, Row] = {}
    for row in rows:
        p = int(row[PARTITION_COLUMN])
        if row["path"] is None:
            summaries[p] = row
        else:
            files.setdefault(p, []).append(
                NewFile(
                    row["path"],
                    p,
                    row["size_bytes"],
                    row["modification_time_ms"],
                    row["stats_json"],
                )
            )
    missing = sorted(set(partitions) - set(summaries))
    if missing:
        raise CompactionError(f"the compaction job reported nothing for partition(s) {missing}")
    outputs = {
        p: PartitionOutput(
            p,
            int(summaries[p]["rows_in"]),
            int(summaries[p]["rows_out"]),
            tuple(sorted(files.get(p, []), key=lambda f: f.path)),
        )
        for p in partitions
    }
    return JobOutput(outputs, _tombstones(summaries))


def _tombstones(summaries: dict[int, Row]) -> TombstoneCounts:
    oldest = [s["oldest_kept_ms"] for s in summaries.values() if s["oldest_kept_ms"] is not None]
    return TombstoneCounts(
        removed=sum(int(s["tombstones_removed"]) for s in summaries.values()),
        kept=sum(int(s["tombstones_kept"]) for s in summaries.values()),
        oldest_kept_ms=min(oldest) if oldest else None,
        partitions_with_kept=frozenset(p for p, s in summaries.items() if s["tombstones_kept"]),
    )


def spark_settings() -> dict[str, str]:
    """Settings a session built for compaction should have (see ``session.py``): none beyond
    the local defaults, since Spark writes no file (timestamps are pyarrow's, in micros)."""
    return {}
