"""``spark.read.format("liftlog")`` on a real node and a real lake: history from the Delta
table, the tail from the leader, stitched with no gap and no duplicate; every option."""

from __future__ import annotations

import datetime as dt
import time
import uuid
from dataclasses import dataclass

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
)

from tests.support.datasource_data import (
    create,
    expected_places,
    flush,
    headers_of,
    key_of,
    lake_node,
    publish,
    rows_by_place,
    value_of,
)
from tests.support.spark_session import liftlog_reader, spark
from tests.support.waiting import wait_for

__all__ = ["lake_node", "spark"]

LAKE_COUNTS = {0: 1000, 1: 600, 2: 300}
TAIL_COUNTS = {0: 200, 1: 100}


@dataclass(frozen=True)
class Orders:
    api: str
    stream: str
    lake_offsets: dict[int, int]
    high_watermarks: dict[int, int]
    boundary_ms: int
    """Every record in the lake is older than this, every tail record newer."""


@pytest.fixture(scope="module")
def orders(lake_node) -> Orders:
    api = lake_node.api_url
    stream = f"orders-{uuid.uuid4().hex[:6]}"
    create(api, stream, partitions=3)
    publish(api, stream, LAKE_COUNTS)
    lake_offsets = flush(api, stream)
    assert lake_offsets == LAKE_COUNTS
    boundary_ms = int(time.time() * 1000) + 1
    wait_for(lambda: time.time() * 1000 > boundary_ms + 1, message="the clock to pass")
    publish(api, stream, TAIL_COUNTS)
    hws = {p: LAKE_COUNTS[p] + TAIL_COUNTS.get(p, 0) for p in LAKE_COUNTS}
    return Orders(api, stream, lake_offsets, hws, boundary_ms)


def read(spark, orders: Orders, **options):
    return liftlog_reader(spark, orders.api, orders.stream, **options)


def places(df) -> set[tuple[int, int]]:
    return set(rows_by_place(df.select("partition", "offset").collect()))


def test_reads_lake_history_and_tail_once_each(spark, orders):
    df = read(spark, orders, maxRecordsPerPartition=250)
    rows = rows_by_place(df.collect())
    assert set(rows) == expected_places({p: (0, hw) for p, hw in orders.high_watermarks.items()})
    for (p, offset), row in rows.items():
        assert row["value"] == value_of(p, offset)
        assert row["key"] == key_of(offset)
        assert row["stream"] == orders.stream
        assert row["subject"] == (f"{orders.stream}.in" if p == 0 else f"{orders.stream}.in.{p}")
    assert df.rdd.getNumPartitions() >= 9  # 1400 lake + 300 tail offsets in tasks of <= 250


def test_seam_range_crosses_lake_and_tail(spark, orders):
    seam = orders.lake_offsets[0]
    df = read(
        spark,
        orders,
        startingOffsets=f'{{"{orders.stream}": {{"0": {seam - 5}}}}}',
        endingOffsets=f'{{"{orders.stream}": {{"0": {seam + 5}, "1": -2, "2": -2}}}}',
    )
    assert sorted(r["offset"] for r in df.collect()) == list(range(seam - 5, seam + 5))


def test_columns_have_kafkas_types(spark, orders):
    df = read(spark, orders, includeHeaders=True)
    types = {f.name: f.dataType for f in df.schema.fields}
    assert df.columns == [
        "key",
        "value",
        "stream",
        "partition",
        "offset",
        "timestamp",
        "headers",
        "subject",
    ]
    assert isinstance(types["key"], BinaryType) and isinstance(types["value"], BinaryType)
    assert isinstance(types["stream"], StringType) and isinstance(types["subject"], StringType)
    assert isinstance(types["partition"], IntegerType) and isinstance(types["offset"], LongType)
    assert isinstance(types["timestamp"], TimestampType)
    assert isinstance(types["headers"], ArrayType)
    assert "headers" not in read(spark, orders).columns


def test_headers_come_from_lake_and_tail(spark, orders):
    df = read(spark, orders, includeHeaders=True, partitions="0")
    for row in df.where(F.col("offset").isin(998, 999, 1000, 1001)).collect():
        expected = headers_of(row["offset"])
        got = {h["key"]: h["value"] for h in row["headers"] or []}
        assert got == ({k: v.encode() for k, v in expected.items()} if expected else {})


def test_offset_words_and_defaults(spark, orders):
    hws = orders.high_watermarks
    assert read(spark, orders).count() == sum(hws.values())
    assert read(spark, orders, startingOffsets="latest").count() == 0
    assert read(spark, orders, endingOffsets="earliest").count() == 0
    per_partition = f'{{"{orders.stream}": {{"0": -1, "1": 650}}}}'
    df = read(spark, orders, startingOffsets=per_partition)
    assert places(df) == expected_places({1: (650, hws[1]), 2: (0, hws[2])})


def test_partitions_option(spark, orders):
    df = read(spark, orders, partitions="0,2")
    counts = {r["partition"]: r["count"] for r in df.groupBy("partition").count().collect()}
    assert counts == {0: orders.high_watermarks[0], 2: orders.high_watermarks[2]}


def test_timestamps_select_by_time(spark, orders):
    after = read(spark, orders, startingTimestamp=orders.boundary_ms)
    assert places(after) == expected_places(
        {p: (orders.lake_offsets[p], hw) for p, hw in orders.high_watermarks.items()}
    )
    before = read(spark, orders, endingTimestamp=orders.boundary_ms)
    assert places(before) == expected_places({p: (0, n) for p, n in orders.lake_offsets.items()})
    boundary = dt.datetime.fromtimestamp(orders.boundary_ms / 1000, dt.UTC)
    assert before.agg(F.max("timestamp")).first()[0] < boundary.replace(tzinfo=None)


def test_min_partitions_splits_small_reads(spark, orders):
    df = read(spark, orders, partitions="2", minPartitions=4)
    assert df.rdd.getNumPartitions() == 4
    assert df.count() == orders.high_watermarks[2]


def test_invalid_options_fail_with_their_name(spark, orders):
    """Spark shows the source's typed error (every case is unit-tested in test_options)."""
    cases = {
        "startingOffset": "earliest",  # misspelt: unknown option
        "endingOffsets": f'{{"{orders.stream}": {{"0": 999999}}}}',  # beyond the HW
    }
    for name, value in cases.items():
        with pytest.raises(PySparkException) as failure:
            read(spark, orders, **{name: value}).count()
        assert "InvalidOptionError" in str(failure.value), name


def test_latest_is_planned_once_per_dataframe(spark, lake_node):
    """Spark 4.3 plans a Python source once per DataFrame: a new load() sees new records."""
    stream = f"frozen-{uuid.uuid4().hex[:6]}"
    create(lake_node.api_url, stream, partitions=1)
    publish(lake_node.api_url, stream, {0: 10})
    df = liftlog_reader(spark, lake_node.api_url, stream)
    assert df.count() == 10
    publish(lake_node.api_url, stream, {0: 5})
    assert df.count() == 10
    assert liftlog_reader(spark, lake_node.api_url, stream).count() == 15


def test_filter_pushdown_prunes_without_changing_results(spark, orders):
    """Fresh load() per query: Spark 4.3 caches a pushed-down plan per DataFrame."""
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    try:
        queries = {
            "partition = 1 AND offset BETWEEN 590 AND 609": 20,  # across the lake/tail seam
            "partition IN (0, 2) AND offset < 3": 6,
            f"timestamp >= TIMESTAMP_MILLIS({orders.boundary_ms})": 300,
            "key = X'6B65792D31' AND partition = 0": 80,  # key-1: offsets = 1 mod 10
        }
        for condition, expected in queries.items():
            assert read(spark, orders, filterPushdown=True).where(condition).count() == expected
    finally:
        spark.conf.unset("spark.sql.python.filterPushdown.enabled")


def test_pushdown_option_needs_sparks_setting(spark, orders):
    with pytest.raises(PySparkException, match="filterPushdown"):
        read(spark, orders, filterPushdown=True).where("offset < 5").count()
