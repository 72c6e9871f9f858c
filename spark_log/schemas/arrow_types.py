"""A registered value schema as typed Arrow columns: the layout of a bound stream's lake table
and of the Spark source's typed rows.

Every field is nullable in Arrow, even one the schema requires. A table's columns outlive the
schema version that created them: a later version may drop a field (its column stays, null
in new rows) or add one (null in old rows), and Delta only adds nullable columns. Keeping all
columns nullable from the start means no evolution ever has to relax a constraint, which
Delta cannot do without rewriting the table.

Avro unions of several types become a struct with one nullable field per branch, named by the
branch's type name as Avro's JSON encoding names it (``string``, ``long``, a record's short
name). Spark's Avro reader names them by position (``member0``...), but positions shift when
a schema change adds a branch, while names do not, so names keep the table's columns stable.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

import pyarrow as pa

from spark_log.json_types import JsonValue
from spark_log.schemas.avro_columns import avro_layout
from spark_log.schemas.column_layout import ColumnKind, ColumnLayout, record
from spark_log.schemas.json_schema_columns import json_schema_layout
from spark_log.schemas.layout_errors import UnsupportedSchemaError

VALUE_FIELD = "value"
"""The one field of the struct of a schema whose top level is not a record."""


@dataclass(frozen=True)
class ValueLayout:
    """The columns of a value: ``columns`` is always a record; ``wrapped`` says the value
    itself sits in its one field ``value`` (the schema's top level is not a record)."""

    columns: ColumnLayout
    wrapped: bool

    @property
    def arrow_type(self) -> pa.StructType:
        return self.columns.arrow


def value_arrow_type(schema_type: str, document: JsonValue) -> pa.StructType:
    """The value's fields as an Arrow struct (``schema_type``: ``AVRO`` or ``JSON``)."""
    return value_layout(schema_type, document).arrow_type


def value_layout(schema_type: str, document: JsonValue) -> ValueLayout:
    """The value's column layout; cached, since every exported batch asks for it."""
    return _cached_layout(schema_type.upper(), json.dumps(document, sort_keys=False))


@functools.lru_cache(maxsize=256)
def _cached_layout(schema_type: str, document_text: str) -> ValueLayout:
    document = json.loads(document_text)
    if schema_type == "AVRO":
        top = avro_layout(document)
    elif schema_type == "JSON":
        top = json_schema_layout(document)
    else:
        raise UnsupportedSchemaError(f"schema type {schema_type!r} has no typed layout")
    if top.kind is ColumnKind.RECORD:
        return ValueLayout(top, wrapped=False)
    return ValueLayout(record([(VALUE_FIELD, top)]), wrapped=True)
