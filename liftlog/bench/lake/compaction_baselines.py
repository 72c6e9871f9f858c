"""What a Spark user would write for "the latest record per key" over the same files, written
out the same way (Parquet, partitioned by ``partition``), so the comparison is the job's own
overhead and its choice of plan. The baselines read and write with Spark's own Parquet
source, on the benchmark's local table only: that is what a Spark user would write (the job
itself reads and writes through pyarrow, so it also runs on object stores)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention
from pyspark.sql.pandas.types import from_arrow_schema

from spark_log.lake.layout import LAKE_SCHEMA

SPARK_LAKE_SCHEMA = from_arrow_schema(LAKE_SCHEMA)

COLUMNS = ("offset", "timestamp", "key", "value", "headers", "subject")


def max_by_struct(source: DataFrame) -> DataFrame:
    """``groupBy(partition, key).agg(max_by(struct(row), offset))``."""
    latest = F.max_by(F.struct(*COLUMNS), "offset").alias("latest")
    return source.groupBy("partition", "key").agg(latest).select("partition", "latest.*")


def row_number_window(source: DataFrame) -> DataFrame:
    """``row_number() over (partition by partition, key order by offset desc) = 1``."""
    window = Window.partitionBy("partition", "key").orderBy(F.col("offset").desc())
    ranked = source.withColumn("rank", F.row_number().over(window))
    return ranked.where("rank = 1").drop("rank")


def max_offset_semi_join(source: DataFrame) -> DataFrame:
    """The compaction job's own plan, bare: ``max(offset)`` per key, then a left-semi join on
    ``(partition, offset)`` (no keyless rows, tombstones, sorting, staging or commit)."""
    winners = source.groupBy("partition", "key").agg(F.max("offset").alias("offset"))
    return source.join(winners.select("partition", "offset"), ["partition", "offset"], "left_semi")


BASELINES: dict[str, Callable[[DataFrame], DataFrame]] = {
    "max_by_struct": max_by_struct,
    "row_number_window": row_number_window,
    "max_offset_semi_join": max_offset_semi_join,
}


def read_lake_files(spark: SparkSession, table_root: str, locations: Sequence[str]) -> DataFrame:
    """Exactly the listed files (a snapshot's), with ``partition`` from their directories."""
    return spark.read.option("basePath", table_root).schema(SPARK_LAKE_SCHEMA).parquet(*locations)


def write(frame: DataFrame, path: str) -> None:
    frame.write.partitionBy("partition").mode("overwrite").parquet(path)
