"""Decoded values as a typed Arrow column: the rows of a bound stream's lake table.

Arrow converts dicts, lists, datetimes, dates, decimals and bytes itself, in C, so the values
go to ``pa.array`` as they are; only the columns the layout marks (Avro unions of several
types, UUID objects, JSON text, JSON Schema date-times) pass through Python first, and a
schema without them costs one Arrow call per batch.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any

import pyarrow as pa

from spark_log.json_types import JsonValue
from spark_log.schemas.arrow_types import VALUE_FIELD, value_layout
from spark_log.schemas.column_layout import ColumnKind, ColumnLayout
from spark_log.schemas.layout_errors import ValueLayoutError

# A decoded value as Arrow takes it (Any: decoded JSON or Avro data has no static type)
Convert = Callable[[Any], Any]
_JSON_TEXT_ENCODER = json.JSONEncoder(sort_keys=True)  # json.dumps would build one per call
_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError)


def values_to_arrow(
    values: Sequence[object | None],
    struct_type: pa.StructType,
    schema_type: str,
    document: JsonValue,
) -> pa.StructArray:
    """``values`` (decoded with ``document``; None for a row without a value) as a struct
    column of ``struct_type``: the schema's own type or a table's evolved one, whose extra
    fields are null and whose wider types take the narrower values as they are."""
    layout = value_layout(schema_type, document)
    converters = {
        name: convert
        for name, child in layout.columns.children
        if (convert := converter(child, name)) is not None
    }
    if not layout.wrapped and not converters:
        return _arrow(values, struct_type, values)
    if layout.wrapped:
        columns = {VALUE_FIELD: values}
    else:
        columns = {name: _field_values(values, name) for name in converters}
    return _assemble(values, struct_type, columns, converters, rows_are_records=not layout.wrapped)


def _assemble(
    values: Sequence[Any],
    struct_type: pa.StructType,
    columns: dict[str, Sequence[Any]],
    converters: dict[str, Convert],
    rows_are_records: bool,
) -> pa.StructArray:
    """The struct from the columns taken out of the rows, converted one by one, and the other
    fields: converted by Arrow from the rows in one call, or null when the rows are not
    records (a wrapped value, written to a table whose type has other fields too)."""
    arrays: dict[str, pa.Array] = {}
    for field in struct_type:
        if field.name in columns:
            convert = converters.get(field.name)
            column = columns[field.name]
            converted = column if convert is None else [convert(v) for v in column]
            arrays[field.name] = _arrow(converted, field.type, values, field.name)
    rest = [field for field in struct_type if field.name not in arrays]
    if rest and rows_are_records:
        plain = _arrow(values, pa.struct(rest), values)
        arrays.update({field.name: plain.field(i) for i, field in enumerate(rest)})
    else:
        arrays.update({field.name: pa.nulls(len(values), field.type) for field in rest})
    mask = pa.array([value is None for value in values], type=pa.bool_())
    return pa.StructArray.from_arrays(
        [arrays[field.name] for field in struct_type], fields=list(struct_type), mask=mask
    )


def _field_values(rows: Sequence[Any], name: str) -> list[Any]:
    try:
        return [None if row is None else row.get(name) for row in rows]
    except AttributeError as error:
        raise _not_records(rows) or ValueLayoutError(str(error)) from error


def _arrow(
    column: Sequence[Any], arrow_type: pa.DataType, rows: Sequence[Any], name: str = ""
) -> Any:  # pa.Array: pyarrow gives no types
    try:
        return pa.array(column, type=arrow_type)
    except _ARROW_ERRORS as error:
        if name:
            raise ValueLayoutError(f"{name}: {error}") from error
        raise _located(rows, arrow_type, error) from error


def converter(layout: ColumnLayout, path: str) -> Convert | None:
    """What a value of ``layout`` needs before Arrow takes it; None when nothing."""
    if not layout.needs_conversion:
        return None
    kind = layout.kind
    if kind is ColumnKind.RECORD:
        return _record(layout, path)
    if kind is ColumnKind.LIST:
        return _list(layout, path)
    if kind is ColumnKind.MAP:
        return _map(layout, path)
    if kind is ColumnKind.UNION:
        return _union(layout, path)
    return _SCALAR_CONVERTERS[kind](path or VALUE_FIELD)


def _record(layout: ColumnLayout, path: str) -> Convert:
    fields = [
        (name, convert)
        for name, child in layout.children
        if (convert := converter(child, _join(path, name))) is not None
    ]

    def convert_record(value: Any) -> Any:
        if not isinstance(value, dict):
            return value  # None, or a value Arrow will refuse with its own message
        out = dict(value)
        for name, convert in fields:
            if name in out:
                out[name] = convert(out[name])
        return out

    return convert_record


def _list(layout: ColumnLayout, path: str) -> Convert:
    item = _child_converter(layout, f"{path}.element")
    return lambda value: [item(v) for v in value] if isinstance(value, list) else value


def _map(layout: ColumnLayout, path: str) -> Convert:
    item = _child_converter(layout, f"{path}.value")
    return lambda value: (
        {k: item(v) for k, v in value.items()} if isinstance(value, dict) else value
    )


def _child_converter(layout: ColumnLayout, path: str) -> Convert:
    convert = converter(layout.children[0][1], path)
    if convert is None:  # needs_conversion says the child does; kept for the type checker
        return lambda value: value
    return convert


def _union(layout: ColumnLayout, path: str) -> Convert:
    """An Avro union value (decoded as the plain value of its branch) as the struct with the
    branch's field set: the branch is the one the value's Python type fits best."""
    branches = [
        (name, child, converter(child, _join(path, name))) for name, child in layout.children
    ]

    def convert_union(value: Any) -> Any:
        if value is None:
            return None
        ranked = [
            (rank, name, convert)
            for name, child, convert in branches
            if (rank := _branch_rank(value, child)) is not None
        ]
        if not ranked:
            raise ValueLayoutError(f"{path}: {value!r} fits no branch of the union")
        _, name, convert = min(ranked, key=lambda item: item[0])
        return {name: value if convert is None else convert(value)}

    return convert_union


def _branch_rank(value: Any, branch: ColumnLayout) -> int | None:
    """How well a decoded value fits a union branch (0 best; None: not at all)."""
    arrow, kind = branch.arrow, branch.kind
    if isinstance(value, bool):
        return 0 if pa.types.is_boolean(arrow) else None
    if isinstance(value, int):
        return 0 if pa.types.is_integer(arrow) else 1 if pa.types.is_floating(arrow) else None
    if isinstance(value, float):
        return 0 if pa.types.is_floating(arrow) else None
    if isinstance(value, str):
        return 0 if pa.types.is_string(arrow) and kind is not ColumnKind.DECIMAL_TEXT else None
    if isinstance(value, uuid.UUID):
        return 0 if kind is ColumnKind.UUID else None
    if isinstance(value, (bytes, bytearray)):
        return 0 if pa.types.is_binary(arrow) or pa.types.is_fixed_size_binary(arrow) else None
    if isinstance(value, Decimal):
        return 0 if pa.types.is_decimal(arrow) or kind is ColumnKind.DECIMAL_TEXT else None
    if isinstance(value, datetime):
        if not pa.types.is_timestamp(arrow):
            return None
        return 0 if (arrow.tz is not None) == (value.tzinfo is not None) else 1
    if isinstance(value, date):
        return 0 if pa.types.is_date(arrow) else None
    if isinstance(value, time):
        return 0 if kind in (ColumnKind.TIME_MILLIS, ColumnKind.TIME_MICROS) else None
    if isinstance(value, list):
        return 0 if kind is ColumnKind.LIST else None
    if isinstance(value, dict):
        return _dict_rank(value, branch)
    return None


def _dict_rank(value: dict[str, Any], branch: ColumnLayout) -> int | None:
    """A record whose fields are exactly the dict's keys first, then a map, then a record
    that has all of the keys."""
    if branch.kind is ColumnKind.MAP:
        return 1
    if branch.kind is not ColumnKind.RECORD:
        return None
    names = {name for name, _ in branch.children}
    if value.keys() == names:
        return 0
    return 2 if value.keys() <= names else None


def _uuid_text(path: str) -> Convert:
    return lambda value: None if value is None else str(value)


def _json_text(path: str) -> Convert:
    """The value's JSON text with sorted keys, so equal values are equal strings."""
    encode = _JSON_TEXT_ENCODER.encode
    return lambda value: None if value is None else encode(value)


def _decimal_text(path: str) -> Convert:
    return lambda value: None if value is None else str(value)


def _datetime_from_text(path: str) -> Convert:
    def parse(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError as error:
            raise ValueLayoutError(f"{path}: {value!r} is not an RFC 3339 date-time") from error
        return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)

    return parse


def _date_from_text(path: str) -> Convert:
    def parse(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return date.fromisoformat(value)
        except ValueError as error:
            raise ValueLayoutError(f"{path}: {value!r} is not an ISO 8601 date") from error

    return parse


def _time_micros(per_unit: int) -> Callable[[str], Convert]:
    """A time of day as microseconds since midnight; a bare int is in the schema's own unit
    (``per_unit`` microseconds each), as Avro's JSON encoding gives it."""

    def make(path: str) -> Convert:
        def micros(value: Any) -> Any:
            if isinstance(value, time):
                seconds = value.hour * 3600 + value.minute * 60 + value.second
                return seconds * 1_000_000 + value.microsecond
            if isinstance(value, int) and not isinstance(value, bool):
                return value * per_unit
            return value

        return micros

    return make


_SCALAR_CONVERTERS: dict[ColumnKind, Callable[[str], Convert]] = {
    ColumnKind.UUID: _uuid_text,
    ColumnKind.JSON_TEXT: _json_text,
    ColumnKind.DECIMAL_TEXT: _decimal_text,
    ColumnKind.DATETIME_TEXT: _datetime_from_text,
    ColumnKind.DATE_TEXT: _date_from_text,
    ColumnKind.TIME_MILLIS: _time_micros(1000),
    ColumnKind.TIME_MICROS: _time_micros(1),
}


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _not_records(rows: Sequence[Any]) -> ValueLayoutError | None:
    for index, row in enumerate(rows):
        if row is not None and not isinstance(row, dict):
            return ValueLayoutError(f"row {index}: {type(row).__name__} is not a record")
    return None


def _located(rows: Sequence[Any], struct_type: pa.StructType, error: Exception) -> Exception:
    """The Arrow error, named with the first column whose values it refuses."""
    if (not_records := _not_records(rows)) is not None:
        return not_records
    for field in struct_type:
        column = [None if row is None else row.get(field.name) for row in rows]
        try:
            pa.array(column, type=field.type)
        except _ARROW_ERRORS as column_error:
            return ValueLayoutError(f"{field.name}: {column_error}")
    return ValueLayoutError(f"values do not fit {struct_type}: {error}")
