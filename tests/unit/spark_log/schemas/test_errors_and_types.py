"""Registry errors carry Confluent's codes; formats and levels parse as Confluent spells them."""

from __future__ import annotations

import pytest

from spark_log.errors import LiftlogError
from spark_log.schemas import (
    CompatibilityLevel,
    IncompatibleSchemaError,
    InvalidCompatibilityLevelError,
    InvalidSchemaError,
    SchemaRegistryError,
    SchemaType,
    SchemaViolationError,
    SubjectNotFoundError,
    VersionNotFoundError,
    errors,
    parse_level,
    parse_schema,
)


@pytest.mark.parametrize(
    ("cls", "error_code", "status"),
    [
        (errors.SubjectNotFoundError, 40401, 404),
        (errors.VersionNotFoundError, 40402, 404),
        (errors.SchemaNotFoundError, 40403, 404),
        (errors.SubjectSoftDeletedError, 40404, 404),
        (errors.SubjectNotSoftDeletedError, 40405, 404),
        (errors.SchemaVersionSoftDeletedError, 40406, 404),
        (errors.SchemaVersionNotSoftDeletedError, 40407, 404),
        (errors.InvalidSchemaError, 42201, 422),
        (errors.InvalidVersionError, 42202, 422),
        (errors.InvalidCompatibilityLevelError, 42203, 422),
    ],
)
def test_registry_errors_carry_confluent_codes(
    cls: type[SchemaRegistryError], error_code: int, status: int
) -> None:
    error = cls("boom")
    assert isinstance(error, LiftlogError)
    assert (error.error_code, error.http_status) == (error_code, status)
    assert error.to_confluent_json() == {"error_code": error_code, "message": "boom"}


def test_codes_are_snake_case_and_distinct() -> None:
    assert SubjectNotFoundError.code == "subject_not_found"
    assert InvalidSchemaError.code == "invalid_schema"
    assert VersionNotFoundError.code != SubjectNotFoundError.code


def test_incompatible_schema_lists_reasons() -> None:
    error = IncompatibleSchemaError(["version 1: a", "version 2: b"])
    assert (error.error_code, error.http_status, error.code) == (409, 409, "incompatible_schema")
    assert error.reasons == ["version 1: a", "version 2: b"]
    assert "version 1: a" in error.message and "version 2: b" in error.message


def test_schema_violation_names_the_field() -> None:
    error = SchemaViolationError("/items/2/price", "expected double, got string")
    assert not isinstance(error, SchemaRegistryError)
    assert error.code == "schema_violation"
    assert str(error) == "field /items/2/price: expected double, got string"
    assert (error.field, error.reason) == ("/items/2/price", "expected double, got string")


def test_parse_level() -> None:
    assert parse_level("backward_transitive") is CompatibilityLevel.BACKWARD_TRANSITIVE
    assert parse_level("NONE") is CompatibilityLevel.NONE
    with pytest.raises(InvalidCompatibilityLevelError, match="SIDEWAYS"):
        parse_level("SIDEWAYS")


def test_parse_schema_refuses_unknown_and_protobuf() -> None:
    with pytest.raises(InvalidSchemaError, match="PROTOBUF schemas are not supported"):
        parse_schema(SchemaType.PROTOBUF, "syntax = 'proto3';")
    with pytest.raises(InvalidSchemaError, match="unknown schema type"):
        parse_schema("XML", "<a/>")
    assert parse_schema("avro", '"string"').schema_type is SchemaType.AVRO
    assert parse_schema(SchemaType.JSON, "{}").schema_type is SchemaType.JSON


def _record_with_default(default: str) -> str:
    return (
        f'{{"type":"record","name":"R","fields":[{{"name":"a","type":"int","default":{default}}}]}}'
    )


@pytest.mark.parametrize(
    ("kind", "text", "reason"),
    [
        ("AVRO", "{not json", "not JSON"),
        ("AVRO", '{"type": "record", "name": "R"}', "invalid Avro schema"),
        ("AVRO", '{"type": "nope"}', "invalid Avro schema"),
        ("AVRO", _record_with_default('"x"'), "(?i)default"),
        ("AVRO", _record_with_default("2147483648"), "out of range for int"),
        ("AVRO", '{"type":"enum","name":"E","symbols":["A","A"]}', "invalid Avro schema"),
        ("AVRO", '{"type": "array", "items": "null"}', "unbounded"),
        ("JSON", "[1, 2]", "object or a boolean"),
        ("JSON", '{"type": "strange"}', "invalid JSON Schema"),
        ("JSON", '{"properties": {"a": {"minimum": "low"}}}', "/properties/a/minimum"),
    ],
)
def test_invalid_schema_text(kind: str, text: str, reason: str) -> None:
    with pytest.raises(InvalidSchemaError, match=reason) as info:
        parse_schema(kind, text)
    assert info.value.error_code == 42201
