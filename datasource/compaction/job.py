"""The Spark part of a compaction: read the snapshot's files, keep the latest record per key,
write the result as Parquet files in the lake's layout.

The computation is a hash aggregation of ``max(offset)`` per ``(partition, key)`` and a
left-semi join of the keyed rows with it on ``(partition, offset)``; offsets are unique per
partition, so the join keeps exactly one row per key (its latest) and never carries more than
two integers per key through the aggregation, and (when the winners are broadcast) whole rows
cross no shuffle until the survivors are repartitioned for writing. This is measurably faster
than the textbook ``row_number()`` window or ``max_by(struct(...), offset)``, which sort or
aggregate whole rows (see docs/benchmarks.md).

Rows without a key are never compacted, nor are rows at or above the boundary. A latest record
that is a tombstone (a key with an empty value) and older than the delete retention goes too.
The output is repartitioned by ``partition`` and sorted by offset, so each partition is
written by one task as files of increasing, non-overlapping offset ranges, split at
``maxRecordsPerFile``: readers prune them by offset just like exported files.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention
from pyspark.sql.pandas.types import from_arrow_schema

from spark_log.lake.layout import LAKE_SCHEMA, MICROS_PER_MILLI, PARTITION_COLUMN

SPARK_LAKE_SCHEMA = from_arrow_schema(LAKE_SCHEMA)
# Spark's default writes timestamps as INT96, which Delta readers do not expect: the lake's
# timestamps are Parquet TIMESTAMP(MICROS, UTC), as delta-rs writes them.
TIMESTAMP_SETTING = ("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
BROADCAST_MAX_WINNERS = 2_000_000
"""Keys (partition, offset pairs, ~16 bytes each) up to which the winners are broadcast:
tens of MB on the driver and each executor."""


@dataclass(frozen=True)
class TombstoneCounts:
    """What the job observed about tombstones while writing (no extra pass over the data)."""

    removed: int
    kept: int
    oldest_kept_ms: int | None
    partitions_with_kept: frozenset[int]


class CompactionMetrics:
    """Spark observations attached to the compacted frame; read them after the write."""

    def __init__(self) -> None:
        suffix = uuid.uuid4().hex[:8]
        self.removed = Observation(f"liftlog_tombstones_removed_{suffix}")
        self.kept = Observation(f"liftlog_tombstones_kept_{suffix}")

    def tombstones(self) -> TombstoneCounts:
        removed = self.removed.get
        kept = self.kept.get
        oldest = kept.get("oldest_kept")
        return TombstoneCounts(
            removed=int(removed.get("removed") or 0),
            kept=int(kept.get("kept") or 0),
            oldest_kept_ms=None if oldest is None else int(oldest) // MICROS_PER_MILLI,
            partitions_with_kept=frozenset(int(p) for p in kept.get("partitions") or []),
        )


def read_lake_files(spark: SparkSession, table_root: str, locations: Sequence[str]) -> DataFrame:
    """Exactly the listed files (a snapshot's), with ``partition`` from their directories:
    reading the directory instead would also read files the snapshot no longer lists."""
    return spark.read.option("basePath", table_root).schema(SPARK_LAKE_SCHEMA).parquet(*locations)


@dataclass
class CompactedFrame:
    """The rows that stay, the observations made while writing them, and the cached winners
    to release once written."""

    frame: DataFrame
    metrics: CompactionMetrics
    winners: DataFrame
    broadcast: bool

    def release(self) -> None:
        self.winners.unpersist()


def compacted_frame(
    source: DataFrame, boundary_offset: int | None, tombstone_cutoff_ms: int
) -> CompactedFrame:
    """The rows that stay: keyless rows, rows at or above the boundary, and each key's latest
    row below it unless that is a tombstone older than the cutoff.

    The winners (partition and offset of each key's latest row) are computed first and cached:
    their exact size then decides the join. Up to BROADCAST_MAX_WINNERS they are broadcast, and
    the keyed rows are filtered where they are read, never shuffled; Spark alone would plan a
    sort-merge join and shuffle every row before AQE could see how small the winners are."""
    below = F.lit(True) if boundary_offset is None else F.col("offset") < boundary_offset
    keyed = source.where(F.col("key").isNotNull() & below)
    winners = (
        keyed.groupBy(PARTITION_COLUMN, "key")
        .agg(F.max("offset").alias("offset"))
        .select(PARTITION_COLUMN, "offset")
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    broadcast = winners.count() <= BROADCAST_MAX_WINNERS
    latest = keyed.join(
        F.broadcast(winners) if broadcast else winners, [PARTITION_COLUMN, "offset"], "left_semi"
    )
    tombstone = F.col("value").isNull() | (F.length("value") == 0)
    cutoff = F.timestamp_micros(F.lit(tombstone_cutoff_ms * MICROS_PER_MILLI))
    expired = tombstone & (F.col("timestamp") < cutoff)
    metrics = CompactionMetrics()
    latest = latest.observe(metrics.removed, _count_if(expired).alias("removed"))
    kept = latest.where(~expired).observe(
        metrics.kept,
        _count_if(tombstone).alias("kept"),
        F.min(F.when(tombstone, F.unix_micros("timestamp"))).alias("oldest_kept"),
        F.collect_set(F.when(tombstone, F.col(PARTITION_COLUMN))).alias("partitions"),
    )
    untouched = source.where(F.col("key").isNull() | ~below)
    return CompactedFrame(kept.unionByName(untouched), metrics, winners, broadcast)


def write_compacted(
    frame: DataFrame, staging_dir: str, partitions: int, max_records_per_file: int
) -> None:
    """Write ``frame`` as ``<staging_dir>/partition=<p>/*.parquet``, one task per partition,
    sorted by offset."""
    spark = frame.sparkSession
    spark.conf.set(*TIMESTAMP_SETTING)
    tasks = max(1, min(partitions, spark.sparkContext.defaultParallelism))
    (
        frame.repartition(tasks, PARTITION_COLUMN)
        .sortWithinPartitions(PARTITION_COLUMN, "offset")
        .write.option("maxRecordsPerFile", max_records_per_file)
        .option("compression", "snappy")
        .partitionBy(PARTITION_COLUMN)
        .mode("errorifexists")
        .parquet(staging_dir)
    )


def _count_if(condition: Column) -> Column:
    return F.count(F.when(condition, F.lit(1)))


def spark_settings() -> dict[str, Any]:
    """Settings a session built for compaction should have (see ``session.py``)."""
    return dict([TIMESTAMP_SETTING])
