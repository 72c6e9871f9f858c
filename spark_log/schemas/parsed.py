"""The one interface the registry, publish validation, the client and the lake use for a schema,
whatever its format."""

from __future__ import annotations

from typing import Protocol

from spark_log.schemas.types import SchemaType


class ParsedSchema(Protocol):
    """A parsed, valid schema. Every method that looks at a record raises
    ``SchemaViolationError`` (naming the field and why) and no other error type."""

    @property
    def schema_type(self) -> SchemaType: ...

    @property
    def document(self) -> object:
        """The schema's JSON document (Avro's JSON, or the JSON Schema)."""
        ...

    def canonical(self) -> str:
        """A normalised text for identity: whitespace and key order do not change it."""
        ...

    def decode(self, payload: bytes) -> object:
        """The value of ``payload`` (the bytes after Confluent's 5-byte header), validated."""
        ...

    def decode_json(self, text: bytes) -> object:
        """The value of a plain JSON document (no header), validated against this schema."""
        ...

    def encode(self, value: object) -> bytes:
        """``value`` validated and serialised in this schema's format (no header)."""
        ...

    def reader_problems(self, writer: ParsedSchema) -> list[str]:
        """Why data written with ``writer`` cannot be read with this schema; empty if it can."""
        ...
