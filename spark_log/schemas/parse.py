"""Parsing schema text of a named format into a ``ParsedSchema``."""

from __future__ import annotations

from spark_log.schemas.errors import InvalidSchemaError
from spark_log.schemas.parsed import ParsedSchema
from spark_log.schemas.types import SchemaType


def parse_schema(schema_type: SchemaType | str, text: str) -> ParsedSchema:
    """The parsed schema; InvalidSchemaError for an unknown or unsupported format or bad text.
    Schema references are not resolved here: the registry refuses schemas that use them.
    Each format's library loads with its first schema: a client that publishes bytes, or a
    CLI command, never pays for fastavro, avro and jsonschema."""
    try:
        kind = SchemaType(str(schema_type).strip().upper())
    except ValueError:
        known = ", ".join(t.value for t in SchemaType if t is not SchemaType.PROTOBUF)
        raise InvalidSchemaError(f"unknown schema type {schema_type!r}; expected {known}") from None
    if kind is SchemaType.AVRO:
        from spark_log.schemas.avro_format import AvroSchema

        return AvroSchema(text)
    if kind is SchemaType.JSON:
        from spark_log.schemas.json_format import JsonSchema

        return JsonSchema(text)
    raise InvalidSchemaError("PROTOBUF schemas are not supported")
