"""The layout of a bound stream's Delta table: the lake's own columns, then the value's fields
as typed top-level columns, decided from the subject's schema versions.

Beside ``partition``, ``offset``, ``timestamp``, ``key``, ``headers`` and ``subject``, a typed
table has ``schema_id`` (the id the value was decoded with), ``invalid_value`` (the bytes of a
value that could not be decoded, whose typed columns are then null) and, when the binding
keeps it, the raw ``value``. A value field named like one of these columns is stored as
``value_<name>`` (and a field that already looks escaped gets one more ``value_``), so the
names map both ways and never clash.

A schema change evolves the table only as a Delta append can follow: new columns (and new
fields inside struct columns) are appended, nullable, and old rows read null there. A change
of an existing column's type (long to double, a wider decimal) cannot be appended without
rewriting the table's history, which the lake never does: it is refused with the column and
both types, and the export stops there with its records kept in the log.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa

from spark_log.lake.layout import LAKE_SCHEMA
from spark_log.schemas.evolution import evolve_struct
from spark_log.schemas.layout_errors import IncompatibleLayoutError, UnsupportedSchemaError

SCHEMA_ID_COLUMN = "schema_id"
INVALID_VALUE_COLUMN = "invalid_value"
RAW_VALUE_COLUMN = "value"
VALUE_PREFIX = "value_"
TYPED_BASE_SCHEMA = pa.schema(
    [
        *(field for field in LAKE_SCHEMA if field.name != RAW_VALUE_COLUMN),
        pa.field(SCHEMA_ID_COLUMN, pa.int64()),
        pa.field(INVALID_VALUE_COLUMN, pa.binary()),
    ]
)
"""The columns every typed table has, before the value's own."""
RAW_VALUE_FIELD = pa.field(RAW_VALUE_COLUMN, pa.binary())
"""The raw value of a typed table: nullable, so that keeping it can start or stop later."""
LAKE_COLUMNS = frozenset(LAKE_SCHEMA.names) | {SCHEMA_ID_COLUMN, INVALID_VALUE_COLUMN}
"""The lake's own column names: a value field never takes one of them."""


def column_name(field_name: str) -> str:
    """The table column of a value field: ``value_<name>`` when the name is the lake's."""
    return f"{VALUE_PREFIX}{field_name}" if _escaped(field_name) else field_name


def field_name(column: str) -> str | None:
    """The value field a table column holds (None: one of the lake's own columns)."""
    if column in LAKE_COLUMNS:
        return None
    rest = column.removeprefix(VALUE_PREFIX)
    return rest if column.startswith(VALUE_PREFIX) and _escaped(rest) else column


def _escaped(name: str) -> bool:
    """Whether a field name needs the prefix: a lake column, or such a name escaped."""
    while True:
        if name in LAKE_COLUMNS:
            return True
        if not name.startswith(VALUE_PREFIX):
            return False
        name = name.removeprefix(VALUE_PREFIX)


def table_value_type(table_schema: pa.Schema) -> pa.StructType:
    """The value fields a table's columns hold, named as the value names them."""
    fields = []
    for field in table_schema:
        name = field_name(field.name)
        if name is not None:
            fields.append(field.with_name(name))
    return pa.struct(fields)


@dataclass(frozen=True)
class TypedLayout:
    """What a batch is written as: ``value_type`` (the value's fields, as the value names
    them) and ``schema`` (every column of the table after the write); ``evolves``: the write
    adds columns, so it merges the table's schema."""

    value_type: pa.StructType
    schema: pa.Schema
    evolves: bool


def plan_layout(
    table_schema: pa.Schema, value_types: Iterable[pa.StructType], keep_raw_value: bool
) -> TypedLayout:
    """The table's layout once rows of ``value_types`` are appended to a table of
    ``table_schema``: its columns kept as they are (refused when one would have to change
    type), new ones appended."""
    current = table_value_type(table_schema)
    evolved = current
    for value_type in value_types:
        evolved = evolve_struct(evolved, value_type)
    for field in current:
        if not _only_adds(field.type, evolved.field(field.name).type):
            raise IncompatibleLayoutError(
                f"column {column_name(field.name)} of the lake table is {field.type} and the "
                f"schema now makes it {evolved.field(field.name).type}: a Delta append cannot "
                "change a column's type and the lake never rewrites history"
            )
    schema = _table_schema(table_schema, evolved, keep_raw_value)
    return TypedLayout(evolved, schema, evolves=not _same_columns(table_schema, schema))


def _table_schema(table_schema: pa.Schema, value_type: pa.StructType, keep_raw: bool) -> pa.Schema:
    """The table's columns in order: the base, the raw value when kept, the value's fields;
    columns the table already has keep their place and, when unchanged, their type."""
    fields = {field.name: field for field in TYPED_BASE_SCHEMA}
    if keep_raw or RAW_VALUE_COLUMN in table_schema.names:
        fields[RAW_VALUE_COLUMN] = _existing(table_schema, RAW_VALUE_FIELD)
    columns = [field.with_name(column_name(field.name)) for field in value_type]
    names = {field.name for field in columns}
    if len(names) != len(columns) or names & fields.keys():
        raise UnsupportedSchemaError(f"the value's fields {value_type.names} clash as columns")
    for field in columns:
        fields[field.name] = field.with_nullable(True)
    ordered = [fields.pop(f.name) for f in table_schema if f.name in fields]
    return pa.schema([*ordered, *fields.values()])


def _existing(table_schema: pa.Schema, field: pa.Field) -> pa.Field:
    index = table_schema.get_field_index(field.name)
    return field if index < 0 else table_schema.field(index)


def _same_columns(table_schema: pa.Schema, schema: pa.Schema) -> bool:
    if table_schema.names != schema.names:
        return False
    return all(
        _only_adds(old.type, new.type) and _only_adds(new.type, old.type)
        for old, new in zip(table_schema, schema, strict=True)
    )


def _only_adds(old: pa.DataType, new: pa.DataType) -> bool:
    """Whether ``new`` is ``old`` with, at most, fields added to its structs (list and map
    field names and nullability aside: Delta's and Arrow's names for them differ)."""
    if pa.types.is_struct(old) and pa.types.is_struct(new):
        names = {field.name: field for field in new}
        return all(f.name in names and _only_adds(f.type, names[f.name].type) for f in old)
    if _is_list(old) and _is_list(new):
        return _only_adds(old.value_type, new.value_type)
    if pa.types.is_map(old) and pa.types.is_map(new):
        return _only_adds(old.key_type, new.key_type) and _only_adds(old.item_type, new.item_type)
    return bool(_plain(old) == _plain(new))


def _is_list(arrow: pa.DataType) -> bool:
    return bool(pa.types.is_list(arrow) or pa.types.is_large_list(arrow))


def _plain(arrow: pa.DataType) -> pa.DataType:
    """A scalar type with the variants Delta's readers return folded into Arrow's own."""
    if pa.types.is_large_string(arrow) or pa.types.is_string_view(arrow):
        return pa.string()
    if pa.types.is_large_binary(arrow) or pa.types.is_binary_view(arrow):
        return pa.binary()
    return arrow
