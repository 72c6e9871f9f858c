"""Schemas of typed streams: Avro and JSON Schema parsing, validation, Confluent's wire format
and compatibility rules, shared by the registry, publish validation, the client and the lake.
Pure: no ZooKeeper, no network."""

from typing import TYPE_CHECKING

from spark_log.schemas.compatibility import check_compatibility
from spark_log.schemas.errors import (
    IncompatibleSchemaError,
    InvalidCompatibilityLevelError,
    InvalidSchemaError,
    InvalidVersionError,
    SchemaNotFoundError,
    SchemaRegistryError,
    SchemaVersionNotSoftDeletedError,
    SchemaVersionSoftDeletedError,
    SchemaViolationError,
    SubjectNotFoundError,
    SubjectNotSoftDeletedError,
    SubjectSoftDeletedError,
    VersionNotFoundError,
)
from spark_log.schemas.parse import parse_schema
from spark_log.schemas.parsed import ParsedSchema
from spark_log.schemas.types import CompatibilityLevel, SchemaType, parse_level
from spark_log.schemas.wire import HEADER_SIZE, MAGIC, frame, unframe

if TYPE_CHECKING:
    from spark_log.schemas.avro_format import AvroSchema
    from spark_log.schemas.json_format import JsonSchema


def __getattr__(name: str) -> object:
    """The two formats load on first use (``parse_schema`` loads them itself)."""
    if name == "AvroSchema":
        from spark_log.schemas.avro_format import AvroSchema

        return AvroSchema
    if name == "JsonSchema":
        from spark_log.schemas.json_format import JsonSchema

        return JsonSchema
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "HEADER_SIZE",
    "MAGIC",
    "AvroSchema",
    "CompatibilityLevel",
    "IncompatibleSchemaError",
    "InvalidCompatibilityLevelError",
    "InvalidSchemaError",
    "InvalidVersionError",
    "JsonSchema",
    "ParsedSchema",
    "SchemaNotFoundError",
    "SchemaRegistryError",
    "SchemaType",
    "SchemaVersionNotSoftDeletedError",
    "SchemaVersionSoftDeletedError",
    "SchemaViolationError",
    "SubjectNotFoundError",
    "SubjectNotSoftDeletedError",
    "SubjectSoftDeletedError",
    "VersionNotFoundError",
    "check_compatibility",
    "frame",
    "parse_level",
    "parse_schema",
    "unframe",
]
