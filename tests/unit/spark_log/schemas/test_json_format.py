"""JSON Schemas: canonical identity, validation with the failing field, strict JSON text."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_log.schemas import JsonSchema, SchemaViolationError, parse_schema
from tests.support.fuzz_profiles import fuzz_settings

ORDER = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "sku": {"type": "string"},
                    "price": {"type": "number", "minimum": 0},
                },
                "required": ["sku", "price"],
            },
        },
    },
    "required": ["id"],
}


def order_schema() -> JsonSchema:
    return JsonSchema(json.dumps(ORDER))


def test_canonical_ignores_whitespace_and_key_order() -> None:
    reordered = json.dumps(dict(reversed(list(ORDER.items()))), indent=2)
    assert JsonSchema(reordered).canonical() == order_schema().canonical()
    assert " " not in order_schema().canonical()


def test_round_trip_is_compact_utf8() -> None:
    schema = order_schema()
    value = {"id": "é", "items": [{"sku": "a", "price": 1.5}]}
    payload = schema.encode(value)
    assert payload == json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    assert schema.decode(payload) == value
    assert schema.decode_json(payload) == value


@pytest.mark.parametrize(
    ("value", "field", "reason"),
    [
        (
            {"id": "a", "items": [{"sku": "a", "price": 1}, {"sku": "b", "price": -1}]},
            "/items/1/price",
            "minimum",
        ),
        (
            {"id": "a", "items": [{"sku": "a", "price": "x"}]},
            "/items/0/price",
            "not of type 'number'",
        ),
        ({"items": []}, "/id", "missing required property"),
        ({"id": "a", "items": [{"price": 1}]}, "/items/0/sku", "missing required property"),
        ([], "", "not of type 'object'"),
    ],
)
def test_violation_names_the_field(value: object, field: str, reason: str) -> None:
    schema = order_schema()
    with pytest.raises(SchemaViolationError, match=reason) as info:
        schema.decode(json.dumps(value).encode())
    assert info.value.field == field
    with pytest.raises(SchemaViolationError):
        schema.encode(value)


@pytest.mark.parametrize(
    ("payload", "reason"),
    [(b"\xc3\x28", "not valid UTF-8"), (b'{"id": ', "not JSON"), (b'{"id": Infinity}', "not JSON")],
)
def test_decode_refuses_bad_text(payload: bytes, reason: str) -> None:
    with pytest.raises(SchemaViolationError, match=reason):
        order_schema().decode(payload)


def test_encode_refuses_values_json_cannot_hold() -> None:
    schema = parse_schema("JSON", "{}")
    with pytest.raises(SchemaViolationError, match="cannot be written as JSON"):
        schema.encode({"x": float("nan")})
    with pytest.raises(SchemaViolationError, match="cannot be written as JSON"):
        schema.encode({"x": object()})


def test_draft_is_taken_from_dollar_schema() -> None:
    draft_2020 = JsonSchema(
        json.dumps(
            {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "prefixItems": [{"type": "integer"}],
            }
        )
    )
    with pytest.raises(SchemaViolationError) as info:
        draft_2020.decode(b'["x"]')
    assert info.value.field == "/0"


def test_unresolvable_reference_is_a_violation_not_a_crash() -> None:
    schema = JsonSchema('{"$ref": "https://example.invalid/schema.json"}')
    with pytest.raises(SchemaViolationError, match="does not resolve"):
        schema.decode(b"{}")


@fuzz_settings()
@given(st.binary(max_size=40))
def test_decode_of_any_bytes_raises_only_schema_violation(payload: bytes) -> None:
    with contextlib.suppress(SchemaViolationError):
        order_schema().decode(payload)
