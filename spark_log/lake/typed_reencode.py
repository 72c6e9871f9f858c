"""The stored value of each row of a typed lake table, rebuilt from its typed columns when the
table does not keep the raw ``value`` (pure: rows and a schema lookup in, bytes out).

A row that has its raw ``value`` keeps it. Otherwise a row with ``invalid_value`` gives those
bytes, a row with neither a schema id nor invalid bytes is a tombstone (empty bytes), and any
other row is its typed columns turned back into the value (column names unescaped, the
lake's own columns left out) and serialised with the schema its ``schema_id`` names, in
Confluent's wire format. For Avro this is the record's original bytes whenever it was
published framed in Confluent's wire format: Avro's binary encoding of a value is
deterministic (one block per array and map, the union branch the value's type selects, as
Confluent's serializers write them). For JSON Schema it is equivalent compact JSON: keys in
the schema's order (sorted inside values kept as JSON text), date-times in UTC, integral
numbers without a fraction, nulls left out unless the property is required, and properties
the schema does not declare (they have no column) lost. A value first published as
plain JSON comes back framed, with the schema id it was exported with.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any, Protocol, cast

import pyarrow as pa

from spark_log.errors import LiftlogError
from spark_log.json_types import JsonValue
from spark_log.lake.errors import LakeValueRebuildError
from spark_log.lake.layout import LAKE_SCHEMA
from spark_log.lake.typed_layout import (
    INVALID_VALUE_COLUMN,
    RAW_VALUE_COLUMN,
    SCHEMA_ID_COLUMN,
    column_name,
)
from spark_log.lake.typed_values import LoadedSchemaLike
from spark_log.schemas.arrow_types import VALUE_FIELD, value_layout
from spark_log.schemas.column_layout import ColumnKind, ColumnLayout
from spark_log.schemas.errors import SchemaNotFoundError
from spark_log.schemas.layout_errors import UnsupportedSchemaError
from spark_log.schemas.parsed import ParsedSchema
from spark_log.schemas.types import SchemaType
from spark_log.schemas.wire import frame

MICROS_PER_MILLI = 1000
_EXACT_FLOAT_INT = 2**53
"""Integral JSON numbers below this are written as integers (a double holds them exactly)."""


class SchemaById(Protocol):
    """The one question a rebuild asks the registry (a node's ``SchemaRegistry``, or a client
    of a node's registry routes); it may block."""

    def loaded(self, schema_id: int) -> LoadedSchemaLike: ...


def raw_values(table: pa.Table, lookup: SchemaById) -> pa.BinaryArray:
    """Each row's stored value (see the module's rules), in row order. A table without
    ``value`` or ``schema_id`` is not a lake table: LakeValueRebuildError, as for a row whose
    schema is gone or whose columns do not encode with it."""
    names = table.column_names
    if RAW_VALUE_COLUMN not in names and SCHEMA_ID_COLUMN not in names:
        raise LakeValueRebuildError(
            f"lake rows have neither {RAW_VALUE_COLUMN} nor {SCHEMA_ID_COLUMN}: {names}"
        )
    values = _column(table, RAW_VALUE_COLUMN)
    schema_ids = _column(table, SCHEMA_ID_COLUMN)
    invalid = _column(table, INVALID_VALUE_COLUMN)
    by_schema: dict[int, list[int]] = {}
    for row, value in enumerate(values):
        if value is not None:
            continue
        if invalid[row] is not None:
            values[row] = invalid[row]
        elif schema_ids[row] is None:
            values[row] = b""  # a tombstone
        else:
            by_schema.setdefault(schema_ids[row], []).append(row)
    for schema_id, rows in by_schema.items():
        encoded = _encoded(table, rows, schema_id, lookup)
        for row, value in zip(rows, encoded, strict=True):
            values[row] = value
    return pa.array(values, pa.binary())


def with_raw_values(table: pa.Table, lookup: SchemaById) -> pa.Table:
    """``table``'s columns of an untyped lake table (those it has, in ``LAKE_SCHEMA``'s
    order) with ``value`` as ``raw_values`` gives it: typed lake rows as a reader of stored
    records wants them. Rows that all kept their value pass without a copy."""
    names = [f.name for f in LAKE_SCHEMA if f.name in table.column_names]
    if RAW_VALUE_COLUMN in names and table.column(RAW_VALUE_COLUMN).null_count == 0:
        return table.select(names)
    value = raw_values(table, lookup)
    fields, arrays = [], []
    for field in LAKE_SCHEMA:
        if field.name == RAW_VALUE_COLUMN:
            fields.append(field)
            arrays.append(value)
        elif field.name in table.column_names:
            fields.append(table.schema.field(field.name))
            arrays.append(table.column(field.name))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _column(table: pa.Table, name: str) -> list[Any]:
    if name not in table.column_names:
        return [None] * table.num_rows
    return list(table.column(name).to_pylist())


def _encoded(table: pa.Table, rows: list[int], schema_id: int, lookup: SchemaById) -> list[bytes]:
    """The rows of one schema id serialised with it and framed."""
    try:
        parsed = lookup.loaded(schema_id).parsed
        layout = value_layout(parsed.schema_type, _document(parsed))
    except (SchemaNotFoundError, UnsupportedSchemaError) as error:
        raise LakeValueRebuildError(
            f"the value at offset {_offset(table, rows[0])} cannot be rebuilt: schema id "
            f"{schema_id}: "
            f"{error}"
        ) from error
    json_schema = parsed.schema_type is SchemaType.JSON
    children = layout.columns.children
    taken = pa.array(rows, pa.int64())
    columns = {name: _taken(table, column_name(name), taken) for name, _ in children}
    out = []
    for index, row in enumerate(rows):
        fields = {name: columns[name][index] for name, _ in children}
        if layout.wrapped:
            value = _back(children[0][1], fields[VALUE_FIELD], json_schema)
        else:
            value = _back(layout.columns, fields, json_schema)
        out.append(_framed(parsed, schema_id, value, functools.partial(_offset, table, row)))
    return out


def _taken(table: pa.Table, column: str, rows: pa.Array) -> Sequence[Any]:
    """A value field's column at ``rows`` (null when the file predates the field)."""
    if column not in table.column_names:
        return [None] * len(rows)
    return list(table.column(column).take(rows).to_pylist())


def _framed(
    parsed: ParsedSchema, schema_id: int, value: object, offset: Callable[[], object]
) -> bytes:
    try:
        return frame(schema_id, parsed.encode(value))
    except LiftlogError as error:
        raise LakeValueRebuildError(
            f"the value at offset {offset()} does not encode with schema id {schema_id}: {error}"
        ) from error


def _offset(table: pa.Table, row: int) -> object:
    """A row's offset, for an error message."""
    if "offset" not in table.column_names:
        return f"(row {row})"
    return table.column("offset")[row].as_py()


def _document(parsed: ParsedSchema) -> JsonValue:
    """A parsed schema's document, which is JSON by construction."""
    return cast(JsonValue, parsed.document)


def _back(layout: ColumnLayout, value: Any, json_schema: bool) -> Any:
    """A column's Python value (as Arrow gives it) as the schema's encoder takes it."""
    if value is None:
        return None
    kind = layout.kind
    if kind is ColumnKind.RECORD:
        return _record(layout, value, json_schema)
    if kind is ColumnKind.LIST:
        item = layout.children[0][1]
        return [_back(item, v, json_schema) for v in value]
    if kind is ColumnKind.MAP:  # Arrow gives a map as (key, value) pairs
        item = layout.children[0][1]
        return {k: _back(item, v, json_schema) for k, v in value}
    if kind is ColumnKind.UNION:
        return _union(layout, value, json_schema)
    if kind is ColumnKind.PLAIN:
        return _json_number(value) if json_schema else value
    return _SCALARS[kind](value)


def _record(layout: ColumnLayout, value: dict[str, Any], json_schema: bool) -> dict[str, Any]:
    """The schema's fields only (a table's struct may have more); a JSON object leaves out
    the null properties it does not require, which is how an absent one was stored."""
    out = {name: _back(child, value.get(name), json_schema) for name, child in layout.children}
    if json_schema:
        return {k: v for k, v in out.items() if v is not None or k in layout.required}
    return out


def _union(layout: ColumnLayout, value: dict[str, Any], json_schema: bool) -> Any:
    """The one branch that holds the value (the others are null)."""
    for name, child in layout.children:
        if value.get(name) is not None:
            return _back(child, value[name], json_schema)
    return None


def _json_number(value: Any) -> Any:
    """An integral double as an integer, as JSON writers commonly print it."""
    if isinstance(value, float) and value.is_integer() and abs(value) < _EXACT_FLOAT_INT:
        return int(value)
    return value


def _datetime_text(value: datetime) -> str:
    """RFC 3339 in UTC, with ``Z`` and no trailing zeros in the fraction."""
    text = value.astimezone(UTC).replace(tzinfo=None).isoformat()
    if "." in text:
        text = text.rstrip("0")
    return f"{text}Z"


def _date_text(value: date) -> str:
    return value.isoformat()


_SCALARS: dict[ColumnKind, Callable[[Any], Any]] = {
    ColumnKind.UUID: str,
    ColumnKind.JSON_TEXT: json.loads,
    ColumnKind.DATETIME_TEXT: _datetime_text,
    ColumnKind.DATE_TEXT: _date_text,
    ColumnKind.DECIMAL_TEXT: Decimal,
    ColumnKind.TIME_MILLIS: lambda micros: micros // MICROS_PER_MILLI,
    ColumnKind.TIME_MICROS: lambda micros: micros,
}
"""Columns whose values were converted on the way in, converted back."""
