"""A table's value type after a compatible schema change, by the rules Delta follows.

History is never rewritten, so a column never moves, never goes and never narrows: the
columns of the current type keep their place (one the new schema dropped stays, null in new
rows), new fields are appended as nullable columns, and a column takes a new type only by a
widening Delta's type widening allows. A new type narrower than the column's (long back to
int) keeps the column as it is, since its values fit. Anything else is refused.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from spark_log.schemas.layout_errors import IncompatibleLayoutError

_INTEGER_WIDTHS = {pa.int8(): 1, pa.int16(): 2, pa.int32(): 4, pa.int64(): 8}
_FLOAT_WIDTHS = {pa.float32(): 4, pa.float64(): 8}
_TO_DOUBLE = {pa.int8(), pa.int16(), pa.int32(), pa.float32()}

Note = Callable[[str], None]


def evolve_struct(current: pa.StructType, new: pa.StructType) -> pa.StructType:
    """The table's value type once rows of ``new`` are written to a table of ``current``."""
    return _evolve_struct(current, new, "", lambda _: None)


def widening_changes(current: pa.StructType, new: pa.StructType) -> list[str]:
    """What ``evolve_struct`` changes, one line each (``new column price: double``,
    ``qty: int32 → int64``); empty when the table keeps its type."""
    changes: list[str] = []
    _evolve_struct(current, new, "", changes.append)
    return changes


def _evolve_struct(
    current: pa.StructType, new: pa.StructType, path: str, note: Note
) -> pa.StructType:
    new_fields = {field.name: field for field in new}
    fields = []
    for field in current:
        if field.name in new_fields:
            name = _join(path, field.name)
            evolved = _evolve(field.type, new_fields[field.name].type, name, note)
            fields.append(field.with_type(evolved).with_nullable(True))
        else:
            fields.append(field.with_nullable(True))
    current_names = {field.name for field in current}
    for field in new:
        if field.name not in current_names:
            note(f"new column {_join(path, field.name)}: {field.type}")
            fields.append(field.with_nullable(True))
    return pa.struct(fields)


def _evolve(current: pa.DataType, new: pa.DataType, path: str, note: Note) -> pa.DataType:
    if current == new:
        return current
    if pa.types.is_struct(current) and pa.types.is_struct(new):
        return _evolve_struct(current, new, path, note)
    if pa.types.is_list(current) and pa.types.is_list(new):
        item = _evolve(current.value_type, new.value_type, f"{path}.element", note)
        return pa.list_(current.value_field.with_type(item))
    if pa.types.is_map(current) and pa.types.is_map(new):
        return _evolve_map(current, new, path, note)
    if _widens(current, new):
        note(f"{path}: {current} → {new}")
        return new
    if _widens(new, current):
        return current
    raise IncompatibleLayoutError(
        f"column {path} cannot change from {current} to {new}: Delta only widens types"
    )


def _evolve_map(current: pa.MapType, new: pa.MapType, path: str, note: Note) -> pa.DataType:
    if current.key_type != new.key_type:
        raise IncompatibleLayoutError(
            f"column {path} cannot change its keys from {current.key_type} to {new.key_type}"
        )
    item = _evolve(current.item_type, new.item_type, f"{path}.value", note)
    return pa.map_(current.key_field, current.item_field.with_type(item))


def _widens(narrow: pa.DataType, wide: pa.DataType) -> bool:
    """Whether Delta's type widening takes a ``narrow`` column to ``wide``: a wider integer or
    float, an int of up to 32 bits or a float to double, a decimal with more digits on both
    sides of the point. A date never becomes a timestamp here (Delta would make it one without
    a time zone, which is not what a schema's timestamp means)."""
    if narrow in _INTEGER_WIDTHS and wide in _INTEGER_WIDTHS:
        return _INTEGER_WIDTHS[narrow] < _INTEGER_WIDTHS[wide]
    if narrow in _FLOAT_WIDTHS and wide in _FLOAT_WIDTHS:
        return _FLOAT_WIDTHS[narrow] < _FLOAT_WIDTHS[wide]
    if wide == pa.float64():
        return narrow in _TO_DOUBLE
    if pa.types.is_decimal128(narrow) and pa.types.is_decimal128(wide):
        digits_before = wide.precision - wide.scale >= narrow.precision - narrow.scale
        return bool(wide.scale >= narrow.scale and digits_before)
    return False


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name
