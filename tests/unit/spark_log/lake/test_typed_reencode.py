"""Stored values rebuilt from a typed lake table's columns, the table committed to a real Delta
table (delta-rs on local files) by the typed export: Avro values come back byte for byte as
Confluent's serializer framed them (fastavro, as ``AvroSerializer`` writes), JSON Schema
values as equivalent compact JSON, invalid values and tombstones as they were stored, a kept
raw value as it is."""

from __future__ import annotations

import datetime as dt
import io
import json
import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from deltalake import DeltaTable

from spark_log.lake import LAKE_SCHEMA, LakeTable
from spark_log.lake.errors import LakeValueRebuildError
from spark_log.lake.typed_export import typed_rows
from spark_log.lake.typed_layout import TYPED_BASE_SCHEMA
from spark_log.lake.typed_reencode import raw_values, with_raw_values
from spark_log.schemas import frame, parse_schema
from spark_log.schemas.errors import SchemaNotFoundError
from spark_log.schemas.json_text import dump_json
from spark_log.schemas.parsed import ParsedSchema

SUBJECT = "orders-value"
ADDRESS = {
    "type": "record",
    "name": "Address",
    "fields": [
        {"name": "zip", "type": "int"},
        {"name": "lines", "type": {"type": "array", "items": "string"}},
    ],
}
ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "qty", "type": "int"},
        {"name": "price", "type": "float"},
        {"name": "total", "type": "double"},
        {"name": "big", "type": "long"},
        {"name": "ok", "type": "boolean"},
        {"name": "blob", "type": "bytes"},
        {"name": "hash", "type": {"type": "fixed", "name": "Hash", "size": 4}},
        {"name": "offset", "type": "long"},  # a lake column's name: value_offset
        {"name": "value_offset", "type": "string"},  # value_value_offset
        {"name": "value", "type": "string"},  # value_value
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "at_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "opens", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "closes", "type": {"type": "long", "logicalType": "time-micros"}},
        {
            "name": "amount",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2},
        },
        {
            "name": "fixed_amount",
            "type": {
                "type": "fixed",
                "name": "Money",
                "size": 8,
                "logicalType": "decimal",
                "precision": 10,
                "scale": 3,
            },
        },
        {
            "name": "huge",  # wider than Delta's decimals: kept as text
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 50, "scale": 4},
        },
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
        {"name": "address", "type": ADDRESS},
        {"name": "previous", "type": {"type": "array", "items": "Address"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "either", "type": ["null", "string", "long", "Address"], "default": None},
    ],
}
READING = {
    "type": "object",
    "properties": {
        "sensor": {"type": "string"},
        "celsius": {"type": "number"},
        "count": {"type": "integer"},
        "at": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "place": {
            "type": "object",
            "properties": {"lat": {"type": "number"}, "lon": {"type": ["number", "null"]}},
            "required": ["lat", "lon"],
        },
        "samples": {"type": "array", "items": {"type": "integer"}},
        "extra": {"type": "object"},  # an open map: kept as JSON text
        "offset": {"type": "integer"},
    },
    "required": ["sensor"],
}


@dataclass(frozen=True)
class Loaded:
    parsed: ParsedSchema


class Registry:
    """The registry's lookups over a dict: ids to schemas, all of one subject."""

    def __init__(self) -> None:
        self.schemas: dict[int, ParsedSchema] = {}

    def add(self, schema_id: int, document: object, schema_type: str = "AVRO") -> ParsedSchema:
        self.schemas[schema_id] = parse_schema(schema_type, json.dumps(document))
        return self.schemas[schema_id]

    def loaded(self, schema_id: int) -> Loaded:
        if schema_id not in self.schemas:
            raise SchemaNotFoundError("Schema not found")
        return Loaded(self.schemas[schema_id])

    def latest_id(self, subject: str) -> int | None:
        return max(self.schemas) if self.schemas else None

    def registered_under(self, subject: str, schema_id: int) -> bool:
        return schema_id in self.schemas


def order(n: int, **extra: Any) -> dict[str, Any]:
    return {
        "id": str(uuid.UUID(int=n)),
        "qty": -(2**31) + n,
        "price": n + 0.1,  # not exact in a float: written as Avro float, read back the same
        "total": n / 3,
        "big": 2**62 + n,
        "ok": n % 2 == 0,
        "blob": bytes([n, 0, 255]),
        "hash": b"\x00\x01\x02" + bytes([n]),
        "offset": 1000 + n,
        "value_offset": f"vo{n}",
        "value": f"v{n}",
        "at": dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=dt.UTC),
        "at_us": dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=dt.UTC),
        "local": dt.datetime(2024, 5, 6, 7, 8, 9, 5000),
        "day": dt.date(2024, 1, n + 1),
        "opens": dt.time(9, 30, n, 250000),
        "closes": dt.time(17, 0, 0, 999999),
        "amount": Decimal(f"-{n}.25"),
        "fixed_amount": Decimal("1234567.891"),
        "huge": Decimal("1" * 40 + ".0100"),
        "status": "PAID" if n % 2 else "NEW",
        "address": {"zip": 75000 + n, "lines": [f"line{n}", "x"]},
        "previous": [{"zip": 1, "lines": []}, {"zip": 2, "lines": ["y"]}],
        "attrs": {"k": n, "a": -n, "z": 0},
        **extra,
    }


def serialised(document: dict[str, Any], schema_id: int, value: dict[str, Any]) -> bytes:
    """What Confluent's AvroSerializer writes: the header, then fastavro's binary value."""
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(document), value)
    return frame(schema_id, out.getvalue())


def lake_rows(values: list[bytes]) -> pa.Table:
    n = len(values)
    return pa.table(
        {
            "partition": pa.array([0] * n, pa.int32()),
            "offset": pa.array(range(n), pa.int64()),
            "timestamp": pa.array([1_700_000_000_000_000] * n, pa.timestamp("us", tz="UTC")),
            "key": pa.array([b"k"] * n, pa.binary()),
            "value": pa.array(values, pa.binary()),
            "headers": pa.nulls(n, LAKE_SCHEMA.field("headers").type),
            "subject": pa.array(["s"] * n, pa.string()),
        },
        schema=LAKE_SCHEMA,
    )


def exported(tmp_path: Any, values: list[bytes], registry: Registry, keep_raw: bool = False):
    """``values`` exported typed to a new Delta table; the table's rows as a reader gets them."""
    table = LakeTable(str(tmp_path / "orders@1"), "orders")
    table.ensure_exists(TYPED_BASE_SCHEMA)
    snapshot = table.snapshot()
    rows = typed_rows(lake_rows(values), snapshot.arrow_schema(), SUBJECT, keep_raw, registry)
    snapshot.append(rows.table, 0, len(values), lambda: True, {}, merge_schema=rows.merge_schema)
    return DeltaTable(table.uri).to_pyarrow_table().sort_by("offset")


def test_avro_values_come_back_byte_for_byte(tmp_path):
    registry = Registry()
    registry.add(3, ORDER)
    values = [
        serialised(ORDER, 3, order(0)),
        serialised(ORDER, 3, order(1, note="hi", either="text")),
        serialised(ORDER, 3, order(2, either=7)),
        serialised(ORDER, 3, order(3, either={"zip": 9, "lines": ["z"]})),
        b"",  # a tombstone
        b"not avro",  # kept as invalid_value
        frame(99, b"\x02"),  # an id that is not the subject's: invalid
    ]
    table = exported(tmp_path, values, registry)
    assert "value" not in table.column_names
    assert table.column("value_value").to_pylist()[:4] == ["v0", "v1", "v2", "v3"]
    assert table.column("value_value_offset").to_pylist()[0] == "vo0"

    assert raw_values(table, registry).to_pylist() == values


def test_a_top_level_array_comes_back_from_its_value_column(tmp_path):
    registry = Registry()
    document = {"type": "array", "items": {"type": "long", "logicalType": "timestamp-micros"}}
    registry.add(1, document)
    at = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    values = [serialised(document, 1, [at, at + dt.timedelta(microseconds=1)])]  # type: ignore[arg-type]
    table = exported(tmp_path, values, registry)
    assert "value_value" in table.column_names
    assert raw_values(table, registry).to_pylist() == values


def test_json_schema_values_come_back_as_equivalent_compact_json(tmp_path):
    registry = Registry()
    schema = registry.add(5, READING, "JSON")
    full = {
        "sensor": "s1",
        "celsius": 21.5,
        "count": 3,
        "at": "2024-05-06T07:08:09.5Z",
        "day": "2024-05-06",
        "place": {"lat": 48.75, "lon": None},  # required: its null stays
        "samples": [1, 2, 3],
        "extra": {"b": [1, {"c": None}], "a": "x"},
        "offset": 12,
    }
    framed = frame(5, dump_json(full))
    plain = json.dumps({"sensor": "s2", "celsius": 20}).encode()  # validated by the leader
    offset_text = json.dumps({"sensor": "s3", "at": "2024-05-06T09:08:09+02:00"}).encode()
    table = exported(tmp_path, [framed, plain, offset_text], registry)

    got = raw_values(table, registry).to_pylist()
    assert got[0] == frame(5, dump_json({**full, "extra": {"a": "x", "b": [1, {"c": None}]}}))
    assert got[1] == frame(5, b'{"sensor":"s2","celsius":20}')  # framed with the export's id
    assert got[2] == frame(5, b'{"sensor":"s3","at":"2024-05-06T07:08:09Z"}')  # in UTC
    for value in got:
        schema.decode(value[5:])  # valid against the schema


def test_kept_raw_values_win_and_missing_ones_are_rebuilt(tmp_path):
    registry = Registry()
    registry.add(3, ORDER)
    values = [serialised(ORDER, 3, order(n)) for n in range(3)]
    table = exported(tmp_path, values, registry, keep_raw=True)
    assert table.column("value").to_pylist() == values
    # rows exported before the raw value was kept (a compaction merges them into one file)
    partly = table.set_column(
        table.schema.get_field_index("value"),
        "value",
        pa.array([values[0], None, None], pa.binary()),
    )
    assert raw_values(partly, registry).to_pylist() == values
    rows = with_raw_values(partly, registry)
    assert rows.column_names == LAKE_SCHEMA.names
    assert rows.column("value").to_pylist() == values
    assert with_raw_values(table, registry).column("value").to_pylist() == values


def test_untyped_rows_pass_as_they_are():
    rows = lake_rows([b"a", b""])
    assert raw_values(rows, Registry()).to_pylist() == [b"a", b""]
    assert with_raw_values(rows, Registry()).equals(rows)


def test_a_schema_gone_from_the_registry_is_a_clear_error(tmp_path):
    registry = Registry()
    registry.add(3, ORDER)
    table = exported(tmp_path, [b"", serialised(ORDER, 3, order(0))], registry)
    with pytest.raises(LakeValueRebuildError, match="offset 1 cannot be rebuilt: schema id 3"):
        raw_values(table, Registry())


def test_columns_that_no_longer_fit_the_schema_are_a_clear_error(tmp_path):
    registry = Registry()
    registry.add(3, ORDER)
    table = exported(tmp_path, [serialised(ORDER, 3, order(0))], registry)
    qty = table.schema.get_field_index("qty")
    broken = table.set_column(qty, "qty", pa.array([2**40], pa.int64()))  # not an Avro int
    with pytest.raises(LakeValueRebuildError, match=r"offset 0 does not encode .*qty"):
        raw_values(broken, registry)
