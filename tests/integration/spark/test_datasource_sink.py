"""``df.write.format("liftlog")`` and ``writeStream``: rows published with acks=all, routed by
partition and key, read back exactly; an idempotent write survives a retried task without a
duplicate; errors fail the write with a clear message."""

from __future__ import annotations

import uuid
import zlib

import pytest
from pyspark import TaskContext
from pyspark.errors import PySparkException
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import BinaryType

from spark_log.api_models import StreamDescription
from spark_log.client.rest import RestClient
from tests.support.datasource_data import create, lake_node, publish, rows_by_place
from tests.support.spark_session import liftlog_reader, spark
from tests.support.waiting import wait_for

__all__ = ["lake_node", "spark"]

PARTITIONS = 3


def new_stream(api: str, prefix: str) -> str:
    stream = f"{prefix}-{uuid.uuid4().hex[:6]}"
    create(api, stream, partitions=PARTITIONS)
    return stream


def write(df, api: str, stream: str, **options) -> None:
    writer = df.write.format("liftlog").mode("append").option("servers", api)
    writer = writer.option("stream", stream)
    for name, value in options.items():
        writer = writer.option(name, str(value))
    writer.save()


def test_round_trip_routes_by_partition_then_key(spark, lake_node):
    api = lake_node.api_url
    stream = new_stream(api, "sink")
    source = spark.range(300).select(
        F.when(F.col("id") % 4 == 0, None)
        .otherwise(F.concat(F.lit("k"), (F.col("id") % 7).cast("string")))
        .alias("key"),
        F.concat(F.lit("v"), F.col("id").cast("string")).cast("binary").alias("value"),
        F.when(F.col("id") % 5 == 0, F.lit(2)).alias("partition"),
        F.array(
            F.struct(F.lit("id").alias("key"), F.col("id").cast("string").alias("value"))
        ).alias("headers"),
    )
    write(source, api, stream)
    rows = liftlog_reader(spark, api, stream, includeHeaders=True).collect()
    assert len(rows) == 300
    by_value = {r["value"]: r for r in rows}
    for i in range(300):
        row = by_value[b"v%d" % i]
        key = None if i % 4 == 0 else b"k%d" % (i % 7)
        assert row["key"] == key
        assert {h["key"]: h["value"] for h in row["headers"]} == {"id": str(i).encode()}
        if i % 5 == 0:
            assert row["partition"] == 2
        elif key is not None:
            assert row["partition"] == zlib.crc32(key) % PARTITIONS
    assert len(rows_by_place(rows)) == 300


def _fail_first_attempt(api: str, stream: str, at_row: int, published: int):
    """A UDF that fails task 0's first attempt at ``at_row``, once the stream shows that the
    writer has published ``published`` of the rows before it (so the retry re-sends them)."""

    def passthrough(value):  # no hints: Spark would try to infer a pandas UDF from them
        context = TaskContext.get()
        first_attempt = context.partitionId() == 0 and context.attemptNumber() == 0
        if first_attempt and int(value.decode().split(":")[1]) >= at_row:
            rest = RestClient(api)
            wait_for(
                lambda: _committed(rest, stream) >= published,
                timeout_s=30,
                message="the first attempt's rows to be published",
            )
            raise RuntimeError("injected failure after some rows were published")
        return value

    return F.udf(passthrough, BinaryType())


def _committed(rest: RestClient, stream: str) -> int:
    described = StreamDescription.from_json(rest.get_json(f"/v1/streams/{stream}"))
    return sum(p.high_watermark or 0 for p in described.partitions)


@pytest.mark.parametrize("idempotent", [True, False])
def test_retried_task_publishes_once_when_idempotent(spark, lake_node, idempotent):
    api = lake_node.api_url
    stream = new_stream(api, "retry")
    # 200-byte rows: a UDF worker sends results back in 64 KiB buffers, so only rows this
    # large reach the writer before the UDF stops at row 1900
    source = spark.range(0, 4000, numPartitions=2).select(
        F.concat(F.lit("row:"), F.col("id").cast("string"), F.lit(":" + "x" * 200))
        .cast("binary")
        .alias("value")
    )
    flaky = source.select(_fail_first_attempt(api, stream, 1900, 1000)("value").alias("value"))
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "500")
    try:
        write(flaky, api, stream, idempotent=str(idempotent).lower())
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    rows = liftlog_reader(spark, api, stream).select("value").collect()
    values = [bytes(r["value"]).split(b":")[1] for r in rows]
    assert set(values) == {b"%d" % i for i in range(4000)}
    if idempotent:
        assert len(values) == 4000
    else:
        assert len(values) > 4000  # the first attempt's rows were published twice


def test_stream_to_stream_copy(spark, lake_node, tmp_path):
    api = lake_node.api_url
    source_stream = new_stream(api, "from")
    target = new_stream(api, "to")
    publish(api, source_stream, {0: 120, 1: 80})
    query = (
        spark.readStream.format("liftlog")
        .option("servers", api)
        .option("stream", source_stream)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "100")
        .load()
        .select("key", "value", "partition")
        .writeStream.format("liftlog")
        .option("servers", api)
        .option("stream", target)
        .option("idempotent", "true")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    copied = liftlog_reader(spark, api, target).collect()
    original = liftlog_reader(spark, api, source_stream).collect()
    assert sorted((r["partition"], r["offset"], r["value"]) for r in copied) == sorted(
        (r["partition"], r["offset"], r["value"]) for r in original
    )


def test_sink_errors_are_clear(spark, lake_node):
    api = lake_node.api_url
    stream = new_stream(api, "bad")
    no_value = spark.range(3).select(F.col("id").cast("string").alias("payload"))
    with pytest.raises(PySparkException, match="needs a 'value' column"):
        write(no_value, api, stream)
    rows = spark.range(3).select(F.lit("x").alias("value"), F.lit(7).alias("partition"))
    with pytest.raises(PySparkException, match="row partition 7 does not exist"):
        write(rows, api, stream)
    with pytest.raises(PySparkException, match="append-only"):
        rows.write.format("liftlog").mode("overwrite").option("servers", api).option(
            "stream", stream
        ).save()
