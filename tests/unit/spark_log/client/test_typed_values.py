"""Typed publish's choices for one value, and the registry's errors rebuilt typed."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass

import pytest
from fastavro import parse_schema as fastavro_schema
from fastavro import schemaless_writer

from spark_log.client.schema_registry import LatestSchema, _version_text, registry_error
from spark_log.client.typed_values import as_datum, binding_of, is_raw, raw_bytes, serialize
from spark_log.errors import InvalidRequestError, LiftlogError
from spark_log.schemas import (
    IncompatibleSchemaError,
    InvalidVersionError,
    SchemaViolationError,
    SubjectNotFoundError,
    parse_schema,
    unframe,
)
from spark_log.value_schema import ValueSchema

ORDER = {
    "type": "record",
    "name": "Order",
    "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int"}],
}
AVRO = ValueSchema(subject="orders-value", format="avro")


@dataclass
class Order:
    id: str
    qty: int


def _latest(schema_id: int = 7) -> LatestSchema:
    return LatestSchema(schema_id, parse_schema("AVRO", json.dumps(ORDER)))


@pytest.mark.parametrize("value", [b"x", bytearray(b"x"), memoryview(b"x"), "x"])
def test_bytes_and_text_are_sent_unchanged(value: object) -> None:
    assert is_raw(value) and raw_bytes(value) == b"x"


@pytest.mark.parametrize("value", [{"id": "a"}, [1], 3, 2.5, True, Order("a", 1)])
def test_other_values_are_data(value: object) -> None:
    assert not is_raw(value)


def test_a_datum_is_framed_avro_as_fastavro_writes_it() -> None:
    framed = serialize("orders", AVRO, _latest(7), Order("o-1", 3))
    found = unframe(framed)
    assert found is not None and found[0] == 7
    out = io.BytesIO()
    schemaless_writer(out, fastavro_schema(ORDER), {"id": "o-1", "qty": 3})
    assert found[1] == out.getvalue()


def test_a_refused_value_names_its_field() -> None:
    with pytest.raises(SchemaViolationError) as refused:
        serialize("orders", AVRO, _latest(), {"id": "o-1", "qty": "three"})
    assert refused.value.field == "/qty"


def test_a_datum_needs_a_bound_stream_and_a_value() -> None:
    with pytest.raises(InvalidRequestError, match=r"bind a schema .* or pass bytes or JSON text"):
        binding_of("orders", None, {"id": "a"})
    with pytest.raises(InvalidRequestError, match="None is no value"):
        binding_of("orders", AVRO, None)
    assert binding_of("orders", AVRO, {"id": "a"}) is AVRO


def test_the_latest_schema_must_be_of_the_bound_format() -> None:
    json_bound = ValueSchema(subject="orders-value", format="json")
    with pytest.raises(InvalidRequestError, match="takes json values"):
        serialize("orders", json_bound, _latest(), {"id": "a", "qty": 1})


def test_dataclasses_become_dicts() -> None:
    assert as_datum(Order("a", 1)) == {"id": "a", "qty": 1}
    assert as_datum(Order) is Order  # the class itself is no datum


def _untyped(code: str, message: str, status: int) -> LiftlogError:
    error = LiftlogError(message)
    error.code, error.status = code, status
    return error


def test_registry_errors_are_rebuilt_typed_with_their_status() -> None:
    typed = registry_error(_untyped("subject_not_found", "subject 'x' not found", 404))
    assert isinstance(typed, SubjectNotFoundError) and typed.status == 404
    incompatible = registry_error(
        _untyped(
            "incompatible_schema",
            "schema is incompatible with an earlier version: field a: no default; field b: type",
            409,
        )
    )
    assert isinstance(incompatible, IncompatibleSchemaError)
    assert incompatible.reasons == ["field a: no default", "field b: type"]
    other = _untyped("stream_not_found", "no stream", 404)
    assert registry_error(other) is other


@pytest.mark.parametrize(("given", "text"), [(1, "1"), ("latest", "latest"), (" LATEST", "latest")])
def test_versions_are_numbers_or_latest(given: int | str, text: str) -> None:
    assert _version_text(given) == text


@pytest.mark.parametrize("given", [0, -1, "first", ""])
def test_other_versions_are_refused(given: int | str) -> None:
    with pytest.raises(InvalidVersionError):
        _version_text(given)
