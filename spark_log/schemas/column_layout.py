"""The typed layout of a schema: each column's Arrow type and what its decoded values need
before Arrow takes them.

One tree serves both the table's type and the value conversion, so a named Avro type or a
JSON Schema ``$ref`` is resolved once, by the same rules, for both; a column whose values
Arrow takes as they are (most of them) is ``PLAIN`` and costs nothing at conversion.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import pyarrow as pa


class ColumnKind(enum.Enum):
    PLAIN = "plain"  # Arrow takes the decoded value as it is
    RECORD = "record"  # a dict whose entries are the children
    LIST = "list"  # a list of the one child
    MAP = "map"  # a dict of string keys to the one child
    UNION = "union"  # an Avro union of several types: a struct with one field per branch
    UUID = "uuid"  # a uuid.UUID (or its text) kept as text
    JSON_TEXT = "json_text"  # a value with no typed column, kept as its JSON text
    DATETIME_TEXT = "datetime_text"  # an RFC 3339 date-time string, parsed to a timestamp
    DATE_TEXT = "date_text"  # an ISO date string, parsed to a date
    DECIMAL_TEXT = "decimal_text"  # a decimal wider than Delta's 38 digits, kept as text
    TIME_MILLIS = "time_millis"  # a time of day (or its int ms) as int64 µs since midnight
    TIME_MICROS = "time_micros"  # a time of day (or its int µs) as int64 µs since midnight


@dataclass(frozen=True)
class ColumnLayout:
    arrow: pa.DataType
    kind: ColumnKind = ColumnKind.PLAIN
    children: tuple[tuple[str, ColumnLayout], ...] = ()
    required: frozenset[str] = frozenset()
    """A JSON Schema object's required properties (what a value rebuilt from the columns must
    keep even when null)."""

    @property
    def needs_conversion(self) -> bool:
        """Whether any value under this column must be changed before Arrow takes it."""
        if self.kind in (ColumnKind.RECORD, ColumnKind.LIST, ColumnKind.MAP):
            return any(child.needs_conversion for _, child in self.children)
        return self.kind is not ColumnKind.PLAIN


def record(
    children: list[tuple[str, ColumnLayout]], required: frozenset[str] = frozenset()
) -> ColumnLayout:
    """A struct column; every field is nullable (see ``arrow_types``)."""
    fields = [pa.field(name, child.arrow, nullable=True) for name, child in children]
    return ColumnLayout(pa.struct(fields), ColumnKind.RECORD, tuple(children), required)


def list_of(item: ColumnLayout) -> ColumnLayout:
    return ColumnLayout(pa.list_(item.arrow), ColumnKind.LIST, (("element", item),))


def map_of(value: ColumnLayout) -> ColumnLayout:
    return ColumnLayout(pa.map_(pa.string(), value.arrow), ColumnKind.MAP, (("value", value),))


JSON_TEXT = ColumnLayout(pa.string(), ColumnKind.JSON_TEXT)
