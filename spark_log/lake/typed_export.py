"""A range of lake rows (``LAKE_SCHEMA``) as the rows of the stream's table, typed or not
(blocking: it may read schemas from the registry).

A bound stream's rows get the value's fields as columns (``typed_layout``): each schema id of
the range is converted in one Arrow call, and the rows are put back in offset order. A value
that decodes but does not fit its columns (a JSON Schema date-time that does not parse) is
found row by row and kept as ``invalid_value``, like one that does not decode. An unbound
stream's rows go as they are, unless its table was typed before (the binding was removed):
then they fill the table's columns, the typed ones null.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import pyarrow as pa

from spark_log.json_types import JsonValue
from spark_log.lake.layout import LAKE_SCHEMA
from spark_log.lake.typed_layout import (
    INVALID_VALUE_COLUMN,
    RAW_VALUE_COLUMN,
    SCHEMA_ID_COLUMN,
    TypedLayout,
    column_name,
    plan_layout,
)
from spark_log.lake.typed_values import DecodedValues, SchemaLookup, decode_values
from spark_log.schemas.arrow_types import value_arrow_type
from spark_log.schemas.arrow_values import values_to_arrow
from spark_log.schemas.layout_errors import ValueLayoutError
from spark_log.schemas.parsed import ParsedSchema


@dataclass(frozen=True)
class TableRows:
    """Rows to append, and whether the append merges new columns into the table."""

    table: pa.Table
    merge_schema: bool


def typed_rows(
    rows: pa.Table,
    table_schema: pa.Schema,
    subject: str,
    keep_raw_value: bool,
    registry: SchemaLookup,
) -> TableRows:
    """``rows`` of a stream bound to ``subject`` as rows of its typed table (whose columns now
    are ``table_schema``). A schema change the table cannot follow is IncompatibleLayoutError
    and a schema without typed columns UnsupportedSchemaError: nothing is written then."""
    decoded = decode_values(rows.column(RAW_VALUE_COLUMN).to_pylist(), subject, registry)
    schemas = {
        schema_id: registry.loaded(schema_id).parsed for schema_id in sorted(decoded.by_schema)
    }
    layout = plan_layout(
        table_schema,
        [value_arrow_type(p.schema_type, _document(p)) for p in schemas.values()],
        keep_raw_value,
    )
    parts = {
        schema_id: _converted(decoded, schema_id, layout, parsed.schema_type, _document(parsed))
        for schema_id, parsed in schemas.items()
    }
    value = _in_row_order(decoded, parts, layout.value_type, rows.num_rows)
    return TableRows(_assemble(rows, decoded, value, layout), layout.evolves)


def untyped_rows(rows: pa.Table, table_schema: pa.Schema) -> TableRows:
    """An unbound stream's rows: as they are for a table of ``LAKE_SCHEMA``; for a table
    typed before, with its other columns null (and ``value`` added back when it has none)."""
    if set(table_schema.names) == set(LAKE_SCHEMA.names):
        return TableRows(rows, merge_schema=False)
    columns = {name: rows.column(name) for name in rows.column_names}
    fields = [
        field.with_nullable(True) if field.name == RAW_VALUE_COLUMN else field
        for field in rows.schema
    ]
    for field in table_schema:
        if field.name not in columns:
            columns[field.name] = pa.nulls(rows.num_rows, field.type)
            fields.append(field.with_nullable(True))
    schema = pa.schema(fields)
    table = pa.Table.from_arrays([columns[f.name] for f in schema], schema=schema)
    return TableRows(table, merge_schema=RAW_VALUE_COLUMN not in table_schema.names)


def _document(parsed: ParsedSchema) -> JsonValue:
    """A parsed schema's document, which is JSON by construction."""
    return cast(JsonValue, parsed.document)


def _converted(
    decoded: DecodedValues,
    schema_id: int,
    layout: TypedLayout,
    schema_type: str,
    document: JsonValue,
) -> pa.StructArray:
    """One schema id's values in the table's value type; values that do not fit it are found
    one by one and made invalid (their rows leave the group)."""
    rows = decoded.by_schema[schema_id]
    values = [decoded.values[row] for row in rows]
    try:
        return values_to_arrow(values, layout.value_type, schema_type, document)
    except ValueLayoutError:
        pass
    for row in list(rows):
        try:
            values_to_arrow([decoded.values[row]], layout.value_type, schema_type, document)
        except ValueLayoutError:
            decoded.mark_invalid(row)
    if schema_id not in decoded.by_schema:
        return pa.array([], type=layout.value_type)
    values = [decoded.values[row] for row in decoded.by_schema[schema_id]]
    return values_to_arrow(values, layout.value_type, schema_type, document)


def _in_row_order(
    decoded: DecodedValues,
    parts: dict[int, pa.StructArray],
    value_type: pa.StructType,
    num_rows: int,
) -> pa.StructArray:
    """The groups' values put back at their rows; rows in no group are null."""
    order: list[int] = []
    arrays: list[pa.Array] = []
    for schema_id, array in parts.items():
        order.extend(decoded.by_schema.get(schema_id, []))
        arrays.append(array)
    placed = set(order)
    rest = [row for row in range(num_rows) if row not in placed]
    order.extend(rest)
    arrays.append(pa.nulls(len(rest), value_type))
    combined = pa.concat_arrays(arrays)
    position = [0] * num_rows
    for index, row in enumerate(order):
        position[row] = index
    return combined.take(pa.array(position, pa.int64()))


def _assemble(
    rows: pa.Table, decoded: DecodedValues, value: pa.StructArray, layout: TypedLayout
) -> pa.Table:
    """The table's columns: the lake's own from ``rows``, ``schema_id``, ``invalid_value``,
    the raw value when the table has it, and each value field as a column."""
    raw = rows.column(RAW_VALUE_COLUMN)
    invalid = set(decoded.invalid)
    columns: dict[str, pa.Array | pa.ChunkedArray] = {
        name: rows.column(name) for name in rows.column_names if name != RAW_VALUE_COLUMN
    }
    columns[SCHEMA_ID_COLUMN] = pa.array(decoded.schema_ids, pa.int64())
    columns[INVALID_VALUE_COLUMN] = _only_rows(raw.to_pylist(), invalid)
    columns[RAW_VALUE_COLUMN] = raw
    for index, field in enumerate(layout.value_type):
        columns[column_name(field.name)] = value.field(index)
    arrays = [_column(columns, field, rows.num_rows) for field in layout.schema]
    return pa.Table.from_arrays(arrays, schema=layout.schema)


def _only_rows(values: Sequence[bytes], rows: set[int]) -> pa.Array:
    return pa.array(
        [value if row in rows else None for row, value in enumerate(values)], pa.binary()
    )


def _column(
    columns: dict[str, pa.Array | pa.ChunkedArray], field: pa.Field, num_rows: int
) -> pa.Array | pa.ChunkedArray:
    """A column of the layout: built above, or null (a column of the table this range has no
    value for); cast to the table's type when Delta named its parts differently."""
    column = columns.get(field.name)
    if column is None:
        return pa.nulls(num_rows, field.type)
    return column if column.type == field.type else column.cast(field.type)
