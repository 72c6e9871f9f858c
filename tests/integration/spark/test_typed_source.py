"""``format("liftlog")`` on a stream bound to an Avro subject: typed columns for lake history
and live tail alike, filters on them pushed to the lake's Parquet statistics, a new schema
version, a streaming query that keeps its schema, and the typed sink. Values are published by
the client, which serialises dicts with the subject's latest schema (Confluent's wire format).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import uuid
from typing import Any

import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from pyspark.errors import PySparkException
from pyspark.sql.datasource import GreaterThanOrEqual
from pyspark.sql.types import (
    ArrayType,
    DoubleType,
    LongType,
    StringType,
    StructType,
    TimestampType,
)

from datasource.pushdown import pruning_from_filters
from spark_log.client import Client
from spark_log.lake.range_read import row_groups
from tests.support.datasource_data import create, flush, lake_node, lake_uri
from tests.support.spark_session import liftlog_reader, spark
from tests.support.waiting import wait_for

__all__ = ["lake_node", "spark"]

AT = dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=dt.UTC)
ADDRESS = {
    "type": "record",
    "name": "Address",
    "fields": [{"name": "zip", "type": "long"}, {"name": "city", "type": "string"}],
}
ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "price", "type": "double"},
        {"name": "offset", "type": "long"},  # a lake column's name: the column is value_offset
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "address", "type": ADDRESS},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
    ],
}
ORDER_V2 = {
    **ORDER,
    "fields": [*ORDER["fields"], {"name": "note", "type": ["null", "string"], "default": None}],
}


def order(n: int, **extra: Any) -> dict[str, Any]:
    return {
        "id": n,
        "price": n + 0.5,
        "offset": 1000 + n,
        "at": AT + dt.timedelta(seconds=n),
        "address": {"zip": 75000 + n, "city": f"city{n}"},
        "tags": [f"t{n}", "x"],
        **extra,
    }


def bound_stream(api: str, partitions: int = 1) -> str:
    stream = f"typed-{uuid.uuid4().hex[:8]}"
    create(api, stream, partitions=partitions, value_schema={"format": "avro"})
    register(api, stream, ORDER)
    return stream


def register(api: str, stream: str, document: dict[str, Any], kind: str = "AVRO") -> int:
    async def run() -> int:
        async with Client(api) as client:
            registry = client.schema_registry
            found = await asyncio.to_thread(
                registry.register, f"{stream}-value", json.dumps(document), kind
            )
            return found.schema_id

    return asyncio.run(run())


def publish(api: str, stream: str, values: list[dict[str, Any]], partition: int = 0) -> None:
    async def run() -> None:
        async with Client(api) as client:
            for n, value in enumerate(values):
                await client.publish(stream, value, key=f"k{n}", partition=partition)

    asyncio.run(run())


def read(spark, api: str, stream: str, **options: object):
    return liftlog_reader(spark, api, stream, **options)


@pytest.fixture(scope="module")
def orders(lake_node) -> tuple[str, str]:
    """Orders 0-9 and 10-19 exported in two flushes (two files), 20-24 in the tail."""
    api = lake_node.api_url
    stream = bound_stream(api)
    publish(api, stream, [order(n) for n in range(10)])
    flush(api, stream)
    publish(api, stream, [order(n) for n in range(10, 20)])
    assert flush(api, stream) == {0: 20}
    publish(api, stream, [order(n) for n in range(20, 25)])
    return api, stream


def test_history_and_tail_are_one_typed_dataframe(spark, orders):
    api, stream = orders
    df = read(spark, api, stream)
    fields = {f.name: f.dataType for f in df.schema.fields}
    assert df.columns[:7] == [
        "partition",
        "offset",
        "timestamp",
        "key",
        "subject",
        "schema_id",
        "invalid_value",
    ]
    assert "stream" not in fields and "value" not in fields
    assert fields["id"] == LongType()
    assert fields["price"] == DoubleType()
    assert fields["value_offset"] == LongType()
    assert fields["at"] == TimestampType()
    assert isinstance(fields["address"], StructType)
    assert [(f.name, f.dataType) for f in fields["address"].fields] == [
        ("zip", LongType()),
        ("city", StringType()),
    ]
    assert isinstance(fields["tags"], ArrayType) and fields["tags"].elementType == StringType()

    rows = sorted(df.collect(), key=lambda r: r["offset"])
    assert [r["offset"] for r in rows] == list(range(25))
    for row in rows:  # offsets 0-19 from the lake's files, 20-24 decoded from the tail
        n = row["offset"]
        assert (row["id"], row["price"], row["value_offset"]) == (n, n + 0.5, 1000 + n)
        assert row["at"] == (AT + dt.timedelta(seconds=n)).replace(tzinfo=None)  # session: UTC
        assert row["address"].asDict() == {"zip": 75000 + n, "city": f"city{n}"}
        assert row["tags"] == [f"t{n}", "x"]
        assert row["key"] == f"k{n % 10 if n < 20 else n - 20}".encode()
        assert row["invalid_value"] is None and row["schema_id"] == rows[0]["schema_id"]
    nested = df.where("address.city = 'city21'").select("tags").collect()
    assert [r["tags"] for r in nested] == [["t21", "x"]]


def test_tail_rows_equal_the_lake_rows_of_the_same_records(spark, lake_node):
    api = lake_node.api_url
    stream = bound_stream(api)
    publish(api, stream, [order(n) for n in range(5)])
    before = sorted(read(spark, api, stream).collect(), key=lambda r: r["offset"])
    raw = read(spark, api, stream, valueFormat="binary").orderBy("offset").collect()
    flush(api, stream)
    after = sorted(read(spark, api, stream).collect(), key=lambda r: r["offset"])
    assert len(before) == 5
    assert before == after
    # the typed lake keeps no raw value: a binary read serialises its columns again, and
    # Avro's binary encoding gives back the bytes published
    again = read(spark, api, stream, valueFormat="binary").orderBy("offset").collect()
    assert [r["value"] for r in again] == [r["value"] for r in raw]


def test_a_bound_json_schema_stream_reads_typed(spark, lake_node):
    api = lake_node.api_url
    stream = f"json-{uuid.uuid4().hex[:8]}"
    create(api, stream, partitions=1, value_schema={"format": "json"})
    reading = {
        "type": "object",
        "properties": {
            "sensor": {"type": "string"},
            "count": {"type": "integer"},
            "place": {"type": "object", "properties": {"lat": {"type": "number"}}},
        },
        "required": ["sensor"],
    }
    register(api, stream, reading, "JSON")
    values = [{"sensor": f"s{n}", "count": n, "place": {"lat": n / 2}} for n in range(3)]
    publish(api, stream, values[:2])
    flush(api, stream)
    publish(api, stream, values[2:])
    df = read(spark, api, stream)
    assert dict(df.dtypes)["count"] == "bigint"
    got = [(r["sensor"], r["count"], r["place"]["lat"]) for r in df.orderBy("offset").collect()]
    assert got == [(f"s{n}", n, n / 2) for n in range(3)]


def test_filters_on_typed_columns_skip_lake_files(spark, orders):
    api, stream = orders
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    try:
        pushed = read(spark, api, stream, filterPushdown=True).where("id >= 15")
        assert sorted(r["id"] for r in pushed.collect()) == list(range(15, 25))
        nested = read(spark, api, stream, filterPushdown=True).where("address.zip < 75003")
        assert sorted(r["id"] for r in nested.collect()) == [0, 1, 2]
    finally:
        spark.conf.unset("spark.sql.python.filterPushdown.enabled")
    rows = pruning_from_filters([GreaterThanOrEqual(("id",), 15)]).rows
    files = DeltaTable(lake_uri(api, stream)).file_uris()
    assert len(files) == 2
    kept = {f: row_groups(pq.ParquetFile(f).metadata, 0, 1 << 62, rows) for f in files}
    read_files = [f for f, (whole, cut) in kept.items() if whole or cut]
    assert len(read_files) == 1  # the file of ids 0-9 is skipped by its statistics
    assert sorted(pq.read_table(read_files[0]).column("id").to_pylist()) == list(range(10, 20))


def test_a_new_compatible_version_adds_a_column_null_for_old_rows(spark, lake_node):
    api = lake_node.api_url
    stream = bound_stream(api)
    publish(api, stream, [order(n) for n in range(3)])
    flush(api, stream)
    publish(api, stream, [order(3)])
    v2 = register(api, stream, ORDER_V2)
    publish(api, stream, [order(4, note="hello")])
    df = read(spark, api, stream)
    assert dict(df.dtypes)["note"] == "string"
    rows = sorted(df.collect(), key=lambda r: r["offset"])
    assert [r["note"] for r in rows] == [None, None, None, None, "hello"]
    assert rows[4]["schema_id"] == v2 and rows[0]["schema_id"] != v2
    flush(api, stream)  # the lake evolves its table the same way
    again = sorted(read(spark, api, stream).collect(), key=lambda r: r["offset"])
    assert again == rows


def test_binary_value_format_gives_kafkas_columns(spark, orders):
    api, stream = orders
    df = read(spark, api, stream, valueFormat="binary")
    assert df.columns == ["key", "value", "stream", "partition", "offset", "timestamp", "subject"]
    assert dict(df.dtypes)["value"] == "binary"
    values = [r["value"] for r in df.orderBy("offset").limit(3).collect()]
    assert all(v[0] == 0 and len(v) > 5 for v in values)  # Confluent's framing: magic byte 0


def test_typed_on_an_unbound_stream_is_a_clear_error(spark, lake_node):
    api = lake_node.api_url
    stream = f"plain-{uuid.uuid4().hex[:8]}"
    create(api, stream, partitions=1)
    with pytest.raises(PySparkException, match="valueFormat=typed needs a stream bound"):
        read(spark, api, stream, valueFormat="typed").collect()
    assert read(spark, api, stream).columns[1] == "value"


def test_a_restarted_stream_fails_when_a_new_version_widens_its_schema(spark, lake_node, tmp_path):
    api = lake_node.api_url
    stream = bound_stream(api)
    publish(api, stream, [order(n) for n in range(3)])
    checkpoint = str(tmp_path / "checkpoint")
    output = str(tmp_path / "output")

    def run() -> list[Any]:
        frame = (
            spark.readStream.format("liftlog")
            .option("servers", api)
            .option("stream", stream)
            .option("startingOffsets", "earliest")
            .load()
        )
        query = (
            frame.writeStream.format("parquet")
            .option("path", output)
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        try:
            query.awaitTermination(120)
            failure = query.exception()
            if failure is not None:
                raise failure
            return spark.read.parquet(output).collect()
        finally:
            query.stop()

    first = run()
    assert sorted(r["id"] for r in first) == [0, 1, 2]
    assert "note" not in first[0].asDict()
    publish(api, stream, [order(3)])
    assert sorted(r["id"] for r in run()) == [0, 1, 2, 3]  # same schema: the restart goes on
    v2 = register(api, stream, ORDER_V2)
    publish(api, stream, [order(4, note="n")])
    with pytest.raises(Exception, match=rf"version 2 \(schema id {v2}\)") as failed:
        run()
    message = str(failed.value)
    assert "new column note" in message and "new checkpoint location" in message
    assert f"{stream}-value" in message and "valueFormat=binary" in message


def test_the_sink_serialises_typed_rows_with_the_latest_schema(spark, lake_node):
    api = lake_node.api_url
    stream = bound_stream(api)
    rows = [
        (f"k{n}".encode(), n, n + 0.5, 1000 + n, AT, (75000 + n, f"city{n}"), [f"t{n}"])
        for n in range(4)
    ]
    schema = (
        "key binary, id long, price double, value_offset long, at timestamp, "
        "address struct<zip: long, city: string>, tags array<string>"
    )
    written = spark.createDataFrame(rows, schema)
    written.write.format("liftlog").option("servers", api).option("stream", stream).mode(
        "append"
    ).save()
    wait_for(lambda: read(spark, api, stream).count() == 4, message="the rows to be stored")
    back = sorted(read(spark, api, stream).collect(), key=lambda r: r["id"])
    assert [(r["id"], r["value_offset"], r["address"]["city"]) for r in back] == [
        (n, 1000 + n, f"city{n}") for n in range(4)
    ]
    assert {r["key"] for r in back} == {f"k{n}".encode() for n in range(4)}
    raw = read(spark, api, stream, valueFormat="binary").collect()
    assert all(r["value"][0] == 0 for r in raw)  # Confluent's wire format
    # a typed read written back as it is: the lake's own columns are not value fields
    read(spark, api, stream).write.format("liftlog").option("servers", api).option(
        "stream", stream
    ).mode("append").save()
    assert read(spark, api, stream).count() == 8


def test_the_sink_refuses_columns_the_schema_lacks(spark, lake_node):
    api = lake_node.api_url
    stream = bound_stream(api)
    frame = spark.createDataFrame([(1, "x")], "id long, colour string")
    with pytest.raises(PySparkException, match="colour"):
        frame.write.format("liftlog").option("servers", api).option("stream", stream).mode(
            "append"
        ).save()
    with pytest.raises(PySparkException, match="no column is a field"):
        spark.createDataFrame([(b"x",)], "value binary").write.format("liftlog").option(
            "servers", api
        ).option("stream", stream).option("valueFormat", "typed").mode("append").save()
