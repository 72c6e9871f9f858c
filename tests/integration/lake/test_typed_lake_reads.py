"""The lake read tier of a typed stream whose table keeps no raw value: once retention has
deleted the exported segments, a consumer reading from offset 0 (REST Arrow pages,
``Client.fetch``, ``Client.subscribe``) gets every record's value exactly as Confluent's
AvroSerializer framed it, rebuilt from the typed columns by the node, tombstones included."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from decimal import Decimal
from typing import Any

import httpx
import pyarrow as pa
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from deltalake import DeltaTable

from spark_log.client import Client
from spark_log.config import LakeConfig, LogConfig
from spark_log.wire import ARROW_STREAM_MEDIA_TYPE
from tests.integration.conftest import create_stream, node_client
from tests.support.confluent_registry import registry_client
from tests.support.waiting import wait_for

COUNT = 1200
BATCH = 300
RETAINED = 200
PAGE = 250
NEVER_S = 3600.0
HUGE_BYTES = 1 << 40
SMALL_LOG = LogConfig(segment_bytes=16 * 1024, retention_check_interval_ms=100)
AT = dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=dt.UTC)
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
        {
            "name": "address",
            "type": {
                "type": "record",
                "name": "Address",
                "fields": [{"name": "zip", "type": "int"}, {"name": "city", "type": "string"}],
            },
        },
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
}


def order(n: int) -> dict[str, Any]:
    return {
        "id": str(uuid.UUID(int=n)),
        "qty": n - 600,
        "price": n + 0.3,
        "offset": 1000 + n,
        "at": AT + dt.timedelta(milliseconds=n),
        "day": dt.date(2024, 1, 1) + dt.timedelta(days=n),
        "opens": dt.time(9, 30, n % 60),
        "amount": Decimal(f"{n}.25"),
        "status": "PAID" if n % 2 else "NEW",
        "address": {"zip": 75000 + n, "city": f"city{n}"},
        "tags": [f"t{n}"] * (n % 3),
        "attrs": {"k": n, "j": -n},
        "note": f"n{n}" if n % 5 else None,
    }


def original_values(api_url: str, stream: str) -> list[bytes]:
    """COUNT values as Confluent's AvroSerializer frames them; every 100th a tombstone."""
    registry = registry_client(api_url)
    registry.register_schema(f"{stream}-value", Schema(json.dumps(ORDER), "AVRO"))
    serializer = AvroSerializer(registry, json.dumps(ORDER), conf={"auto.register.schemas": False})
    context = SerializationContext(stream, MessageField.VALUE)
    return [b"" if n % 100 == 99 else serializer(order(n), context) for n in range(COUNT)]


async def build_history(api: httpx.Client, url: str, stream: str) -> tuple[list[bytes], int]:
    """Every value published, exported and retention run until the log starts past most of
    them; the values and the log start."""
    create_stream(api, stream, retention_messages=RETAINED, value_schema={"format": "avro"})
    values = original_values(url, stream)
    async with Client(url) as client:
        for first in range(0, COUNT, BATCH):
            chunk = values[first : first + BATCH]
            keys = [f"k{n % 50}" for n in range(first, first + BATCH)]
            await client.publish_batch(stream, chunk, keys=keys, partition=0)
    flushed = api.post(f"/v1/streams/{stream}/flush")
    assert flushed.status_code == 200, flushed.text
    assert flushed.json()["partitions"][0]["lake_offset"] == COUNT
    log_start = wait_for(
        lambda: (start := describe(api, stream)["log_start_offset"]) >= COUNT - BATCH and start,
        20,
        message="retention deleted exported segments",
    )
    return values, log_start


def describe(api: httpx.Client, stream: str) -> dict[str, Any]:
    described = api.get(f"/v1/streams/{stream}")
    assert described.status_code == 200, described.text
    partition: dict[str, Any] = described.json()["partitions"][0]
    return partition


def read_arrow(api: httpx.Client, stream: str) -> list[bytes]:
    """Every value from offset 0 by the ``Liftlog-Next-Offset`` header, over Arrow pages."""
    got: list[bytes] = []
    offset = 0
    while offset < COUNT:
        page = api.get(
            f"/v1/streams/{stream}/partitions/0/records",
            params={"offset": offset, "max_records": PAGE},
            headers={"Accept": ARROW_STREAM_MEDIA_TYPE},
        )
        assert page.status_code == 200, page.text
        table = pa.ipc.open_stream(pa.py_buffer(page.content)).read_all()
        assert table.column("offset").to_pylist() == list(range(offset, offset + table.num_rows))
        got += table.column("value").to_pylist()
        offset = int(page.headers["liftlog-next-offset"])
    return got


async def test_a_typed_table_without_raw_values_serves_the_original_bytes(
    make_node, stream_name, tmp_path
):
    node = make_node(
        log=SMALL_LOG,
        lake=LakeConfig(
            uri=str(tmp_path / "lake"), export_interval_s=NEVER_S, export_min_bytes=HUGE_BYTES
        ),
    )
    with node_client(node.api_url, timeout=60) as api:
        values, log_start = await build_history(api, node.api_url, stream_name)
        assert 0 < log_start < COUNT
        uri = api.get(f"/v1/streams/{stream_name}").json()["lake"]["uri"]
        columns = pa.schema(DeltaTable(uri).schema().to_arrow()).names
        assert "value" not in columns and "value_offset" in columns  # nothing raw to read
        assert read_arrow(api, stream_name) == values

    async with Client(node.api_url) as client:
        fetched: list[bytes] = []
        offset = 0
        while offset < COUNT:
            page = await client.fetch(stream_name, 0, offset, max_records=PAGE)
            fetched += [r.value for r in page.records]
            offset = page.next_offset
        subscribed = [
            (r.offset, r.value)
            async for r in client.subscribe(
                stream_name, 0, 0, stop=COUNT - 1, fetch_max_records=PAGE
            )
        ]
    assert fetched == values
    assert subscribed == list(enumerate(values))
