"""Avro schemas: canonical identity, binary round trips, plain JSON values and violations."""

from __future__ import annotations

import contextlib
import datetime
import decimal
import json
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_log.schemas import AvroSchema, SchemaViolationError, parse_schema
from tests.support.fuzz_profiles import fuzz_settings

ITEM = {
    "type": "record",
    "name": "Item",
    "fields": [
        {"name": "sku", "type": "string"},
        {"name": "price", "type": "double"},
        {"name": "tags", "type": {"type": "map", "values": "long"}, "default": {}},
    ],
}
ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "doc": "an order",
    "fields": [
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "items", "type": {"type": "array", "items": ITEM}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "gift", "type": ["null", "shop.Item"], "default": None},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {
            "name": "total",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
        },
        {"name": "count", "type": "int", "default": 0},
    ],
}
ORDER_ID = "5f0c6a43-33e5-4d39-9a77-2c37b6c1a1b7"


def order_schema() -> AvroSchema:
    return AvroSchema(json.dumps(ORDER))


def an_order(**changes: object) -> dict[str, object]:
    value: dict[str, object] = {
        "id": ORDER_ID,
        "items": [
            {"sku": "a", "price": 1.5, "tags": {"x": 1}},
            {"sku": "b", "price": 2.0, "tags": {}},
        ],
        "status": "PAID",
        "note": "ring twice",
        "gift": {"sku": "g", "price": 0.0, "tags": {}},
        "at": datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.UTC),
        "day": datetime.date(2024, 5, 1),
        "total": decimal.Decimal("3.50"),
        "count": 2,
    }
    value.update(changes)
    return value


def test_canonical_ignores_whitespace_key_order_docs_and_namespaces() -> None:
    pretty = json.dumps(ORDER, indent=4)
    reordered = json.dumps(dict(reversed(list(ORDER.items()))))
    qualified = json.dumps({**ORDER, "name": "shop.Order", "namespace": "other", "doc": "x"})
    forms = {AvroSchema(text).canonical() for text in (pretty, reordered, qualified)}
    assert forms == {order_schema().canonical()}
    assert '"name":"shop.Item"' in order_schema().canonical()
    assert "doc" not in order_schema().canonical()


def test_canonical_keeps_what_compatibility_depends_on() -> None:
    base = order_schema().canonical()
    for field, key, value in [(8, "default", 1), (0, "aliases", ["ident"])]:
        changed = json.loads(json.dumps(ORDER))
        changed["fields"][field][key] = value
        assert AvroSchema(json.dumps(changed)).canonical() != base
    assert '"logicalType":"decimal","precision":9,"scale":2' in base
    assert AvroSchema('{"type": "string"}').canonical() == '"string"'


def test_binary_round_trip_of_nested_records_arrays_maps_enums_unions_logical_types() -> None:
    schema = order_schema()
    value = an_order()
    decoded = schema.decode(schema.encode(value))
    assert decoded == {**value, "id": uuid.UUID(ORDER_ID)}


def test_defaults_fill_missing_fields() -> None:
    schema = order_schema()
    value = an_order()
    del value["count"], value["note"]
    decoded = schema.decode(schema.encode(value))
    assert isinstance(decoded, dict)
    assert (decoded["count"], decoded["note"]) == (0, None)


def test_decode_json_takes_json_natural_values() -> None:
    schema = order_schema()
    text = json.dumps(
        {
            "id": ORDER_ID,
            "items": [{"sku": "a", "price": 1, "tags": {"x": 1}}],
            "status": "NEW",
            "note": None,
            "at": 1714564800000,
            "day": "2024-05-01",
            "total": "3.5",
        }
    ).encode()
    value = schema.decode_json(text)
    assert isinstance(value, dict)
    assert value["total"] == decimal.Decimal("3.5") and value["count"] == 0
    decoded = schema.decode(schema.encode(value))
    assert isinstance(decoded, dict)
    assert decoded["at"] == datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.UTC)
    assert decoded["day"] == datetime.date(2024, 5, 1)


@pytest.mark.parametrize(
    ("changes", "field", "reason"),
    [
        (
            {"items": [{"sku": "a", "price": 1.0}, {"sku": "b", "price": "x"}]},
            "/items/1/price",
            "expected double",
        ),
        ({"status": "LOST"}, "/status", "not a symbol"),
        ({"note": 5}, "/note", "no branch of union"),
        ({"gift": {"sku": "g"}}, "/gift/price", "missing required field"),
        ({"count": 2**31}, "/count", "out of range for int"),
        ({"count": True}, "/count", "expected int"),
        ({"total": decimal.Decimal("1.234")}, "/total", "more than 2 digits"),
        ({"total": decimal.Decimal("12345678.9")}, "/total", "more than 9 digits"),
        ({"id": "not-a-uuid"}, "/id", "not a UUID"),
        (
            {"items": [{"sku": "a", "price": 1.0, "tags": {"k": "v"}}]},
            "/items/0/tags/k",
            "expected long",
        ),
        ({"extra": 1}, "/extra", "not in record"),
    ],
)
def test_encode_violation_names_the_field(
    changes: dict[str, object], field: str, reason: str
) -> None:
    with pytest.raises(SchemaViolationError, match=reason) as info:
        order_schema().encode(an_order(**changes))
    assert info.value.field == field


def test_missing_required_field_is_named() -> None:
    value = an_order()
    del value["status"]
    with pytest.raises(SchemaViolationError) as info:
        order_schema().encode(value)
    assert (info.value.field, info.value.reason) == ("/status", "missing required field")


def test_decode_refuses_trailing_and_truncated_and_garbage() -> None:
    schema = order_schema()
    payload = schema.encode(an_order())
    with pytest.raises(SchemaViolationError, match="1 trailing bytes"):
        schema.decode(payload + b"\x00")
    with pytest.raises(SchemaViolationError, match="truncated"):
        schema.decode(payload[:-1])
    text = AvroSchema('"string"')
    with pytest.raises(SchemaViolationError, match="not Avro"):
        text.decode(b"\x04\xff\xfe")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (b"\xff{}", "not valid UTF-8"),
        (b"{", "not JSON"),
        (b'{"a": NaN}', "not JSON"),
        (b"[1]", "expected record"),
    ],
)
def test_decode_json_refuses_bad_text(text: bytes, reason: str) -> None:
    with pytest.raises(SchemaViolationError, match=reason) as info:
        order_schema().decode_json(text)
    assert info.value.field == ""


def test_bytes_and_fixed_from_json_text() -> None:
    schema = parse_schema(
        "AVRO",
        json.dumps(
            {
                "type": "record",
                "name": "B",
                "fields": [
                    {"name": "raw", "type": "bytes"},
                    {"name": "hash", "type": {"type": "fixed", "name": "H", "size": 2}},
                ],
            }
        ),
    )
    assert schema.decode_json(b'{"raw": "\\u00ff\\u0000", "hash": "ab"}') == {
        "raw": b"\xff\x00",
        "hash": b"ab",
    }
    with pytest.raises(SchemaViolationError, match="needs 2 bytes") as info:
        schema.decode_json(b'{"raw": "", "hash": "abc"}')
    assert info.value.field == "/hash"
    with pytest.raises(SchemaViolationError, match="code points"):
        schema.decode_json(b'{"raw": "\\u0100", "hash": "ab"}')


@fuzz_settings()
@given(st.binary(max_size=80))
def test_decode_of_any_bytes_raises_only_schema_violation(payload: bytes) -> None:
    schema = order_schema()
    with contextlib.suppress(SchemaViolationError):
        schema.decode(payload)


@fuzz_settings()
@given(st.binary(max_size=40))
def test_decode_json_of_any_bytes_raises_only_schema_violation(payload: bytes) -> None:
    with contextlib.suppress(SchemaViolationError):
        order_schema().decode_json(payload)
