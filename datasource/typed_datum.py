"""Typed columns back to values: the datum each row's value fields make, for serialising.

The sink serialises a DataFrame's rows with the subject's schema, and a binary read gives a
typed lake row its value bytes again, both from columns named as the typed table names them
(``value_<name>`` for a field named like a lake column). Arrow hands rows over as Python
values already (structs as dicts, timestamps as datetimes, decimals as Decimals); only maps,
which Arrow gives as key-value pairs, become dicts, and a null field is left out so that the
schema's default (or its error naming the field) applies.
"""

from __future__ import annotations

import pyarrow as pa

from spark_log.lake.typed_layout import field_name


def value_columns(schema: pa.Schema) -> list[tuple[str, str]]:
    """(column, value field) of every column that holds a value field."""
    pairs = []
    for column in schema.names:
        name = field_name(column)
        if name is not None:
            pairs.append((column, name))
    return pairs


def row_datums(
    rows: pa.Table | pa.RecordBatch, columns: list[tuple[str, str]]
) -> list[dict[str, object]]:
    """One dict per row of its value fields (null fields left out)."""
    datums: list[dict[str, object]] = [{} for _ in range(rows.num_rows)]
    for column, name in columns:
        array = rows.column(column)
        arrow_type = array.type
        for datum, value in zip(datums, array.to_pylist(), strict=True):
            if value is not None:
                datum[name] = plain_value(value, arrow_type)
    return datums


def plain_value(value: object, arrow_type: pa.DataType) -> object:
    """``value`` (as Arrow's ``to_pylist`` gives it) with maps made dicts, at any depth."""
    if value is None:
        return None
    if pa.types.is_map(arrow_type) and isinstance(value, list):
        return {k: plain_value(v, arrow_type.item_type) for k, v in value}
    if pa.types.is_struct(arrow_type) and isinstance(value, dict):
        types = {field.name: field.type for field in arrow_type}
        return {k: plain_value(v, types[k]) for k, v in value.items() if v is not None}
    if (pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type)) and isinstance(
        value, list
    ):
        return [plain_value(v, arrow_type.value_type) for v in value]
    return value
