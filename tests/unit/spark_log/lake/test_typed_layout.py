"""The typed table's layout: value fields as columns with the lake's names escaped both ways,
new fields appended, and a column's type never changed."""

from __future__ import annotations

import pyarrow as pa
import pytest

from spark_log.lake.layout import LAKE_SCHEMA
from spark_log.lake.typed_layout import (
    TYPED_BASE_SCHEMA,
    column_name,
    field_name,
    plan_layout,
    table_value_type,
)
from spark_log.schemas.layout_errors import IncompatibleLayoutError


@pytest.mark.parametrize(
    ("field", "column"),
    [
        ("amount", "amount"),
        ("offset", "value_offset"),
        ("value", "value_value"),
        ("schema_id", "value_schema_id"),
        ("invalid_value", "value_invalid_value"),
        ("value_offset", "value_value_offset"),  # looks escaped: escaped once more
        ("value_amount", "value_amount"),
        ("value_", "value_"),
    ],
)
def test_value_fields_named_like_lake_columns_are_escaped_both_ways(field, column):
    assert column_name(field) == column
    assert field_name(column) == field


def test_the_lake_columns_are_not_value_fields():
    for name in [*TYPED_BASE_SCHEMA.names, "value"]:
        assert field_name(name) is None


def base(*fields):
    return pa.schema([*TYPED_BASE_SCHEMA, *fields])


def test_a_first_schema_appends_its_columns_after_the_base():
    layout = plan_layout(
        TYPED_BASE_SCHEMA, [pa.struct([("id", pa.int64()), ("offset", pa.string())])], False
    )
    assert layout.schema.names == [*TYPED_BASE_SCHEMA.names, "id", "value_offset"]
    assert layout.value_type.names == ["id", "offset"]
    assert layout.evolves
    assert all(layout.schema.field(n).nullable for n in ("id", "value_offset"))


def test_the_same_schema_again_does_not_evolve_the_table():
    table = base(
        pa.field("id", pa.int64()), pa.field("tags", pa.list_(pa.field("element", pa.string())))
    )
    layout = plan_layout(
        table, [pa.struct([("id", pa.int64()), ("tags", pa.list_(pa.string()))])], False
    )
    assert not layout.evolves
    assert layout.schema.names == table.names


def test_keeping_the_raw_value_adds_a_nullable_value_column():
    layout = plan_layout(TYPED_BASE_SCHEMA, [pa.struct([("id", pa.int64())])], True)
    assert layout.schema.field("value").nullable
    assert layout.schema.names.index("value") < layout.schema.names.index("id")


def test_a_table_exported_before_the_binding_keeps_its_raw_value_column():
    layout = plan_layout(LAKE_SCHEMA, [pa.struct([("id", pa.int64())])], False)
    assert layout.schema.field("value") == LAKE_SCHEMA.field("value")
    assert layout.schema.names[-3:] == ["schema_id", "invalid_value", "id"]


def test_a_new_field_and_a_new_nested_field_are_appended():
    table = base(pa.field("address", pa.struct([("zip", pa.int64())])))
    new = pa.struct(
        [
            ("address", pa.struct([("zip", pa.int64()), ("city", pa.string())])),
            ("note", pa.string()),
        ]
    )
    layout = plan_layout(table, [new], False)
    assert layout.evolves
    assert layout.schema.field("address").type == new.field("address").type
    assert layout.schema.names[-2:] == ["address", "note"]


def test_a_dropped_field_keeps_its_column():
    table = base(pa.field("id", pa.int64()), pa.field("gone", pa.string()))
    layout = plan_layout(table, [pa.struct([("id", pa.int64())])], False)
    assert not layout.evolves
    assert layout.value_type.names == ["id", "gone"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (pa.int64(), pa.float64()),  # long → double
        (pa.date32(), pa.int64()),  # date → long
        (pa.decimal128(10, 2), pa.decimal128(12, 2)),  # a widening Delta cannot append
        (pa.string(), pa.int64()),
    ],
)
def test_a_column_never_changes_its_type(old, new):
    table = base(pa.field("amount", old))
    with pytest.raises(IncompatibleLayoutError, match="amount") as caught:
        plan_layout(table, [pa.struct([("amount", new)])], False)
    assert str(old) in str(caught.value)
    assert str(new) in str(caught.value)


def test_table_value_type_reads_the_value_fields_back():
    table = base(pa.field("value_offset", pa.int64()), pa.field("id", pa.string()))
    assert table_value_type(table) == pa.struct([("offset", pa.int64()), ("id", pa.string())])
