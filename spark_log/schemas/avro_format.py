"""An Avro schema: fastavro encodes and decodes, Apache Avro decides compatibility.

fastavro is the fast binary codec; Apache Avro's parser and ``ReaderWriterCompatibilityChecker``
are the reference implementation of the resolution rules. Both parse the schema, so a schema
either library refuses is invalid.
"""

from __future__ import annotations

import io
import json
import struct
import warnings
from typing import Any

import avro.errors
import avro.schema
import fastavro
from fastavro import schemaless_reader, schemaless_writer

from spark_log.schemas.avro_bounds import check_bounded
from spark_log.schemas.avro_canonical import canonical_text
from spark_log.schemas.avro_datum import conform
from spark_log.schemas.avro_resolution import resolution_problems
from spark_log.schemas.errors import InvalidSchemaError, SchemaViolationError
from spark_log.schemas.json_text import load_json
from spark_log.schemas.parsed import ParsedSchema
from spark_log.schemas.types import SchemaType

# What fastavro's binary reader raises on bytes that are not a value of the schema.
_DECODE_ERRORS = (ValueError, IndexError, KeyError, TypeError, OverflowError, struct.error)


class AvroSchema:
    """A valid Avro schema; see ``ParsedSchema`` for what each method promises."""

    def __init__(self, text: str) -> None:
        try:
            self._document: object = json.loads(text)
        except (ValueError, RecursionError) as error:
            raise InvalidSchemaError(f"Avro schema is not JSON: {error}") from None
        self._reference = _parse_reference(text)
        self._named: dict[str, Any] = {}
        self._codec: Any = _parse_codec(self._document, self._named)
        _check_defaults(self._named)
        check_bounded(self._codec, self._named)
        self._canonical = canonical_text(self._document)

    @property
    def schema_type(self) -> SchemaType:
        return SchemaType.AVRO

    @property
    def document(self) -> object:
        return self._document

    def canonical(self) -> str:
        """Parsing Canonical Form plus logicalType, precision, scale, default and aliases."""
        return self._canonical

    def decode(self, payload: bytes) -> object:
        """The value of Avro binary ``payload``, which must hold exactly one value."""
        stream = io.BytesIO(payload)
        try:
            value = schemaless_reader(stream, self._codec, None)
        except EOFError:
            raise SchemaViolationError("", "payload is truncated") from None
        except RecursionError:
            raise SchemaViolationError("", "payload is nested too deeply") from None
        except _DECODE_ERRORS as error:
            raise SchemaViolationError("", f"payload is not Avro of this schema: {error}") from None
        left = len(payload) - stream.tell()
        if left:
            raise SchemaViolationError("", f"{left} trailing bytes after the value")
        return value

    def decode_json(self, text: bytes) -> object:
        """A plain JSON value as a datum of this schema (unions unwrapped, logical types given
        JSON-naturally: epoch numbers or ISO-8601 text, decimals as numbers or text)."""
        return conform(self._codec, self._named, load_json(text), from_json=True)

    def encode(self, value: object) -> bytes:
        datum = conform(self._codec, self._named, value, from_json=False)
        out = io.BytesIO()
        try:
            schemaless_writer(out, self._codec, datum)
        except RecursionError:
            raise SchemaViolationError("", "value is nested too deeply") from None
        except _DECODE_ERRORS as error:
            raise SchemaViolationError("", f"value cannot be written as Avro: {error}") from None
        return out.getvalue()

    def reader_problems(self, writer: ParsedSchema) -> list[str]:
        if not isinstance(writer, AvroSchema):
            return [f"reader is {SchemaType.AVRO}, writer is {writer.schema_type}"]
        return resolution_problems(self._reference, writer._reference)

    def __repr__(self) -> str:
        return f"AvroSchema({self._canonical})"


def _parse_reference(text: str) -> Any:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return avro.schema.parse(text)
    except (avro.errors.AvroException, ValueError, TypeError, KeyError, AttributeError) as error:
        raise InvalidSchemaError(f"invalid Avro schema: {error}") from None
    except RecursionError:
        raise InvalidSchemaError("invalid Avro schema: nested too deeply") from None


def _parse_codec(document: Any, named: dict[str, Any]) -> Any:
    """fastavro's parsed schema; ``named`` receives its named types by full name."""
    try:
        return fastavro.parse_schema(document, named_schemas=named)
    except (fastavro.schema.SchemaParseException, ValueError, TypeError, KeyError) as error:
        raise InvalidSchemaError(f"invalid Avro schema: {error}") from None
    except RecursionError:
        raise InvalidSchemaError("invalid Avro schema: nested too deeply") from None


def _check_defaults(named: dict[str, Any]) -> None:
    """Refuse a field default that is not a value of its field's type (a reader would fail on
    the first record missing that field, long after the schema was accepted)."""
    for schema in named.values():
        if schema.get("type") not in ("record", "error"):
            continue
        for field in schema["fields"]:
            if "default" not in field:
                continue
            field_type = field["type"]
            if isinstance(field_type, list) and field_type:
                field_type = field_type[0]
            try:
                conform(field_type, named, field["default"], from_json=True)
            except SchemaViolationError as error:
                raise InvalidSchemaError(
                    f"invalid Avro schema: default of field {schema['name']}.{field['name']}"
                    f" is not a {_type_name(field_type)}: {error.reason}"
                ) from None


def _type_name(schema: Any) -> str:
    if isinstance(schema, dict):
        return str(schema.get("logicalType") or schema.get("name") or schema.get("type"))
    return str(schema)
