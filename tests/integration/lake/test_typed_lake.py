"""Typed lake tables through a real node: values serialised by Confluent's own Avro and JSON
Schema serializers (framed with the ids the node's registry gave), exported by a flush, and
read back typed with deltalake, Polars, DuckDB and Spark (the Parquet files of the snapshot:
the test session's Spark has no Delta jars). A compatible schema change adds its column; one
the table cannot follow stops the export with a clear error and loses nothing."""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from decimal import Decimal
from typing import Any

import duckdb
import httpx
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from deltalake import DeltaTable

from datasource.compaction import compact_stream
from datasource.compaction.target import describe_target
from liftlog import cli
from spark_log.client import Client
from spark_log.client.rest import RestClient
from spark_log.config import LakeConfig
from tests.integration.conftest import create_stream, fetch, node_client
from tests.support.compaction_race import QUIET
from tests.support.confluent_registry import registry_client

NEVER_S = 3600.0
HUGE_BYTES = 1 << 40
HOUR_MS = 3_600_000
AT = dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=dt.UTC)
ADDRESS = {
    "type": "record",
    "name": "Address",
    "fields": [{"name": "zip", "type": "int"}, {"name": "city", "type": "string"}],
}
ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "qty", "type": "int"},
        {"name": "price", "type": "float"},
        {"name": "offset", "type": "long"},  # a lake column's name: stored as value_offset
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "opens", "type": {"type": "int", "logicalType": "time-millis"}},
        {
            "name": "amount",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2},
        },
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
        {"name": "address", "type": ADDRESS},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
    ],
}
ORDER_V2 = {
    **ORDER,
    "fields": [*ORDER["fields"], {"name": "note", "type": ["null", "string"], "default": None}],
}
QTY_AS_DOUBLE = {  # BACKWARD compatible (Avro promotes int to double), not appendable
    **ORDER_V2,
    "fields": [{**f, "type": "double"} if f["name"] == "qty" else f for f in ORDER_V2["fields"]],
}
READING = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "sensor": {"type": "string"},
        "celsius": {"type": "number"},
        "count": {"type": "integer"},
        "ok": {"type": "boolean"},
        "at": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "level": {"type": "string", "enum": ["low", "high"]},
        "place": {
            "type": "object",
            "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
        },
        "samples": {"type": "array", "items": {"type": "integer"}},
    },
    "required": ["sensor"],
}


def order(n: int, **extra: Any) -> dict[str, Any]:
    return {
        "id": str(uuid.UUID(int=n)),
        "qty": n,
        "price": n + 0.5,
        "offset": 1000 + n,
        "at": AT + dt.timedelta(seconds=n),
        "day": dt.date(2024, 1, n + 1),
        "opens": dt.time(9, 30, n),
        "amount": Decimal(f"{n}.25"),
        "status": "PAID" if n % 2 else "NEW",
        "address": {"zip": 75000 + n, "city": f"city{n}"},
        "tags": [f"t{n}", "x"],
        "attrs": {"k": n},
        **extra,
    }


def lake_node(make_node: Any) -> Any:
    return make_node(lake=LakeConfig(export_interval_s=NEVER_S, export_min_bytes=HUGE_BYTES))


def avro_serializer(client: SchemaRegistryClient, document: dict[str, Any]) -> AvroSerializer:
    return AvroSerializer(client, json.dumps(document), conf={"auto.register.schemas": False})


def serialise(serializer: Any, stream: str, values: list[dict[str, Any]]) -> list[bytes]:
    context = SerializationContext(stream, MessageField.VALUE)
    return [serializer(value, context) for value in values]


async def publish(url: str, stream: str, values: list[bytes]) -> None:
    async with Client(url) as client:
        await client.publish_batch(stream, values)


def flush(api: httpx.Client, stream: str) -> str:
    resp = api.post(f"/v1/streams/{stream}/flush")
    assert resp.status_code == 200, resp.text
    return str(resp.json()["lake"]["uri"])


def delta_rows(uri: str) -> list[dict[str, Any]]:
    return DeltaTable(uri).to_pyarrow_table().sort_by("offset").to_pylist()


async def test_a_bound_avro_stream_is_a_typed_table_in_four_readers(make_node, stream_name, spark):
    node = lake_node(make_node)
    with node_client(node.api_url, timeout=60) as api:
        create_stream(api, stream_name, value_schema={"format": "avro"})
        registry = registry_client(node.api_url)
        schema_id = registry.register_schema(
            f"{stream_name}-value", Schema(json.dumps(ORDER), "AVRO")
        )
        values = serialise(avro_serializer(registry, ORDER), stream_name, [order(0), order(1)])
        await publish(node.api_url, stream_name, values)
        uri = flush(api, stream_name)

    schema = pa.schema(DeltaTable(uri).schema().to_arrow())
    assert "value" not in schema.names  # the raw value only when asked
    assert schema.field("schema_id").type == pa.int64()
    assert schema.field("qty").type == pa.int64()  # Avro int: 64-bit from the start
    assert schema.field("price").type == pa.float64()
    assert schema.field("value_offset").type == pa.int64()
    assert schema.field("at").type == pa.timestamp("us", tz="UTC")
    assert schema.field("day").type == pa.date32()
    assert schema.field("opens").type == pa.int64()  # µs since midnight
    assert schema.field("amount").type == pa.decimal128(12, 2)
    assert schema.field("status").type == pa.string()
    assert schema.field("id").type == pa.string()
    assert schema.field("address").type == pa.struct([("zip", pa.int64()), ("city", pa.string())])
    assert pa.types.is_list(schema.field("tags").type)
    assert pa.types.is_map(schema.field("attrs").type)

    rows = delta_rows(uri)
    assert [(r["offset"], r["value_offset"], r["schema_id"]) for r in rows] == [
        (0, 1000, schema_id),
        (1, 1001, schema_id),
    ]
    first = rows[1]
    assert first["id"] == "00000000-0000-0000-0000-000000000001"
    assert first["at"] == AT + dt.timedelta(seconds=1)
    assert first["day"] == dt.date(2024, 1, 2)
    assert first["opens"] == (9 * 3600 + 30 * 60 + 1) * 1_000_000
    assert first["amount"] == Decimal("1.25")
    assert first["status"] == "PAID"
    assert first["address"] == {"zip": 75001, "city": "city1"}
    assert first["tags"] == ["t1", "x"]
    assert first["attrs"] == [("k", 1)]
    assert first["invalid_value"] is None

    frame = pl.read_delta(uri).sort("offset")  # Polars
    assert frame.schema["amount"] == pl.Decimal(12, 2)
    assert frame.schema["address"] == pl.Struct({"zip": pl.Int64, "city": pl.String})
    assert frame["address"].struct.field("city").to_list() == ["city0", "city1"]
    assert frame["status"].to_list() == ["NEW", "PAID"]

    with duckdb.connect() as con:  # DuckDB over the Delta snapshot
        con.register("snapshot", DeltaTable(uri).to_pyarrow_dataset())
        got = con.sql(
            "select address.city, tags[1], attrs['k'], amount, \"day\" from snapshot "
            'order by "offset"'
        ).fetchall()
    assert got == [
        ("city0", "t0", 0, Decimal("0.25"), dt.date(2024, 1, 1)),
        ("city1", "t1", 1, Decimal("1.25"), dt.date(2024, 1, 2)),
    ]

    files = DeltaTable(uri).file_uris()  # Spark: the Parquet files the snapshot lists
    spark_rows = (
        spark.read.option("basePath", uri)
        .parquet(*files)
        .selectExpr("offset", "address.city as city", "amount", "tags[0] as tag", "attrs['k'] as k")
        .orderBy("offset")
        .collect()
    )
    assert [(r.offset, r.city, r.amount, r.tag, r.k) for r in spark_rows] == [
        (0, "city0", Decimal("0.25"), "t0", 0),
        (1, "city1", Decimal("1.25"), "t1", 1),
    ]


async def test_a_bound_json_schema_stream_is_a_typed_table(make_node, stream_name):
    node = lake_node(make_node)
    with node_client(node.api_url, timeout=60) as api:
        create_stream(api, stream_name, value_schema={"format": "json", "keep_raw_value": True})
        registry = registry_client(node.api_url)
        schema_id = registry.register_schema(
            f"{stream_name}-value", Schema(json.dumps(READING), "JSON")
        )
        serializer = JSONSerializer(
            json.dumps(READING), registry, conf={"auto.register.schemas": False}
        )
        reading = {
            "sensor": "s1",
            "celsius": 21.5,
            "count": 3,
            "ok": True,
            "at": "2024-05-06T07:08:09.5Z",
            "day": "2024-05-06",
            "level": "high",
            "place": {"lat": 48.8, "lon": 2.3},
            "samples": [1, 2, 3],
        }
        framed = serialise(serializer, stream_name, [reading])
        plain = json.dumps({"sensor": "s2"}).encode()  # plain JSON, validated by the leader
        await publish(node.api_url, stream_name, [*framed, plain, b""])
        uri = flush(api, stream_name)

    rows = delta_rows(uri)
    assert [(r["sensor"], r["schema_id"]) for r in rows] == [
        ("s1", schema_id),
        ("s2", schema_id),  # plain JSON: the subject's latest version at export
        (None, None),  # a tombstone
    ]
    assert [r["value"] for r in rows] == [framed[0], plain, b""]  # kept, as asked
    first = rows[0]
    assert first["at"] == dt.datetime(2024, 5, 6, 7, 8, 9, 500000, tzinfo=dt.UTC)
    assert first["day"] == dt.date(2024, 5, 6)
    assert (first["celsius"], first["count"], first["ok"], first["level"]) == (
        21.5,
        3,
        True,
        "high",
    )
    assert first["place"] == {"lat": 48.8, "lon": 2.3}
    assert first["samples"] == [1, 2, 3]
    frame = pl.read_delta(uri).sort("offset")
    assert frame.schema["at"] == pl.Datetime("us", "UTC")
    assert frame.schema["count"] == pl.Int64


async def test_schema_changes_evolve_the_table_or_stop_its_export_losing_nothing(
    make_node, stream_name, spark, capsys
):
    node = lake_node(make_node)
    subject = f"{stream_name}-value"
    with node_client(node.api_url, timeout=60) as api:
        create_stream(api, stream_name, value_schema={"format": "avro"})
        registry = registry_client(node.api_url)
        registry.register_schema(subject, Schema(json.dumps(ORDER), "AVRO"))
        v1 = avro_serializer(registry, ORDER)
        await publish(node.api_url, stream_name, serialise(v1, stream_name, [order(0)]))
        uri = flush(api, stream_name)
        history = len(DeltaTable(uri).history())

        v2_id = registry.register_schema(subject, Schema(json.dumps(ORDER_V2), "AVRO"))
        v2 = avro_serializer(registry, ORDER_V2)
        await publish(node.api_url, stream_name, serialise(v2, stream_name, [order(1, note="hi")]))
        flush(api, stream_name)
        rows = delta_rows(uri)
        assert [(r["offset"], r["note"], r["qty"]) for r in rows] == [(0, None, 0), (1, "hi", 1)]
        assert rows[1]["schema_id"] == v2_id
        assert len(DeltaTable(uri).history()) == history + 1  # appended: nothing rewritten

        registry.register_schema(subject, Schema(json.dumps(QTY_AS_DOUBLE), "AVRO"))
        wider = avro_serializer(registry, QTY_AS_DOUBLE)
        await publish(node.api_url, stream_name, serialise(wider, stream_name, [order(2, qty=2.5)]))
        refused = api.post(f"/v1/streams/{stream_name}/flush")
        assert refused.status_code == 409, refused.text
        error = refused.json()["error"]
        assert error["code"] == "incompatible_layout"
        assert "qty" in error["message"]
        assert "int64" in error["message"] and "double" in error["message"]
        partition = api.get(f"/v1/streams/{stream_name}/partitions/0").json()
        assert partition["lake_offset"] == 2
        assert "qty" in partition["lake_error"]["message"]
        assert len(DeltaTable(uri).history()) == history + 1
        kept = fetch(api, stream_name, offset=2)["records"]  # still in the log
        assert len(kept) == 1
        capsys.readouterr()
        assert cli.main(["stream", "describe", stream_name, "--server", node.api_url]) == 0
        assert "partition 0: lake export stalled: " in capsys.readouterr().out

    files = DeltaTable(uri).file_uris()
    frame = spark.read.option("mergeSchema", "true").option("basePath", uri).parquet(*files)
    assert [(r.offset, r.note) for r in frame.orderBy("offset").collect()] == [(0, None), (1, "hi")]


async def test_compaction_keeps_the_typed_layout(make_node, stream_name, spark):
    node = lake_node(make_node)
    subject = f"{stream_name}-value"
    with node_client(node.api_url, timeout=60) as api:
        create_stream(
            api,
            stream_name,
            value_schema={"format": "avro"},
            compaction=True,
            delete_retention_ms=HOUR_MS,
        )
        registry = registry_client(node.api_url)
        registry.register_schema(subject, Schema(json.dumps(ORDER), "AVRO"))
        v1 = serialise(avro_serializer(registry, ORDER), stream_name, [order(0), order(1)])
        async with Client(node.api_url) as client:
            await client.publish_batch(stream_name, v1, keys=["a", "b"], partition=0)
            uri = flush(api, stream_name)
            registry.register_schema(subject, Schema(json.dumps(ORDER_V2), "AVRO"))
            v2 = serialise(avro_serializer(registry, ORDER_V2), stream_name, [order(2, note="n")])
            await client.publish_batch(stream_name, [*v2, b""], keys=["a", "b"], partition=0)
        flush(api, stream_name)
        schema_before = pa.schema(DeltaTable(uri).schema().to_arrow())
        target = describe_target(RestClient(node.api_url), stream_name)

    report = compact_stream(spark, target, QUIET)
    assert report.committed
    assert pa.schema(DeltaTable(uri).schema().to_arrow()) == schema_before
    rows = delta_rows(uri)
    # a's latest (offset 2, written with v2) and b's fresh tombstone (offset 3) stay
    assert [(r["offset"], r["key"], r["qty"], r["note"]) for r in rows] == [
        (2, b"a", 2, "n"),
        (3, b"b", None, None),
    ]
    assert rows[0]["address"] == {"zip": 75002, "city": "city2"}
    assert rows[0]["amount"] == Decimal("2.25")
    for location in DeltaTable(uri).file_uris():  # the rewritten files hold every column
        assert set(pq.read_schema(location.removeprefix("file://")).names) >= set(
            schema_before.names
        ) - {"partition"}

    later = int(time.time() * 1000) + 2 * HOUR_MS  # past the delete retention
    assert compact_stream(spark, target, QUIET, now_ms=later).tombstones_removed == 1
    assert [r["offset"] for r in delta_rows(uri)] == [2]
