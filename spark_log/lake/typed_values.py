"""Decoding a bound stream's stored values for its typed lake table.

A value framed in Confluent's wire format is decoded with the schema its id names; a plain
one (JSON text, as the leader accepts for a bound stream) with the subject's latest version
at export, whose id the row then records: the leader validated it against the latest version
when it was published, and the id it used is not stored with the record. An empty value is a
tombstone: no schema, no columns. A value that does not decode (written before the stream was
bound, or framed with an id that is unknown or not the subject's) is invalid: it keeps its
bytes in ``invalid_value`` and its typed columns stay null, so nothing is dropped and the
export goes on. A registry that cannot answer is not an invalid value: that error stops the
round, which is retried.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from spark_log.schemas.errors import SchemaNotFoundError, SchemaViolationError
from spark_log.schemas.parsed import ParsedSchema
from spark_log.schemas.wire import unframe


class LoadedSchemaLike(Protocol):
    """A registered schema as the registry hands it out."""

    @property
    def parsed(self) -> ParsedSchema: ...


class SchemaLookup(Protocol):
    """What the export asks the schema registry (``coordinator.schemas.SchemaRegistry``);
    blocking, so only from the lake's threads."""

    def loaded(self, schema_id: int) -> LoadedSchemaLike: ...

    def latest_id(self, subject: str) -> int | None: ...

    def registered_under(self, subject: str, schema_id: int) -> bool: ...


@dataclass
class DecodedValues:
    """Each row's schema id (None: a tombstone or an invalid value) and decoded value, the
    rows of each schema id, and the rows whose value did not decode."""

    schema_ids: list[int | None]
    values: list[object]
    by_schema: dict[int, list[int]] = field(default_factory=dict)
    invalid: list[int] = field(default_factory=list)

    def mark_invalid(self, row: int) -> None:
        schema_id = self.schema_ids[row]
        if schema_id is not None:
            self.by_schema[schema_id].remove(row)
            if not self.by_schema[schema_id]:
                del self.by_schema[schema_id]
        self.schema_ids[row] = None
        self.values[row] = None
        self.invalid.append(row)


def decode_values(raw: list[bytes], subject: str, registry: SchemaLookup) -> DecodedValues:
    """Decode every value of a batch (see the module's rules). A batch names few schema
    ids: the registry is asked once per id, not once per row."""
    decoded = DecodedValues([None] * len(raw), [None] * len(raw))
    latest = registry.latest_id(subject)
    schemas: dict[int, ParsedSchema | None] = {}
    for row, value in enumerate(raw):
        if not value:
            continue  # a tombstone
        framed = unframe(value)
        schema_id = latest if framed is None else framed[0]
        try:
            parsed = (
                None
                if schema_id is None
                else _parsed(schemas, schema_id, subject, registry, framed is not None)
            )
            if schema_id is None or parsed is None:
                raise SchemaViolationError("", "no schema of the subject decodes this value")
            decoded.values[row] = (
                parsed.decode_json(value) if framed is None else parsed.decode(framed[1])
            )
        except (SchemaViolationError, SchemaNotFoundError):
            decoded.invalid.append(row)
            continue
        decoded.schema_ids[row] = schema_id
        decoded.by_schema.setdefault(schema_id, []).append(row)
    return decoded


def _parsed(
    schemas: dict[int, ParsedSchema | None],
    schema_id: int,
    subject: str,
    registry: SchemaLookup,
    framed: bool,
) -> ParsedSchema | None:
    """The schema a value decodes with: None when it has no id of the subject (a framed id
    registered elsewhere, or no version for plain JSON). Remembered per batch."""
    if schema_id not in schemas:
        known = not framed or registry.registered_under(subject, schema_id)
        schemas[schema_id] = registry.loaded(schema_id).parsed if known else None
    return schemas[schema_id]
