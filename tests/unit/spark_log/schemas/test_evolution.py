"""Table value types after a schema change: columns appended, widened (also inside structs,
lists and maps), kept when dropped or narrowed, and other type changes refused."""

from __future__ import annotations

import pyarrow as pa
import pytest

from spark_log.schemas.arrow_types import value_arrow_type
from spark_log.schemas.evolution import evolve_struct, widening_changes
from spark_log.schemas.layout_errors import IncompatibleLayoutError


def struct(**fields):
    return pa.struct(list(fields.items()))


def test_an_added_column_is_appended_nullable():
    current = struct(id=pa.int64(), name=pa.string())
    new = pa.struct([("price", pa.float64()), pa.field("id", pa.int64(), nullable=False)])
    evolved = evolve_struct(current, new)
    assert [(f.name, f.type, f.nullable) for f in evolved] == [
        ("id", pa.int64(), True),
        ("name", pa.string(), True),
        ("price", pa.float64(), True),
    ]
    assert widening_changes(current, new) == ["new column price: double"]


@pytest.mark.parametrize(
    ("narrow", "wide"),
    [
        (pa.int32(), pa.int64()),
        (pa.int8(), pa.int16()),
        (pa.int16(), pa.int64()),
        (pa.float32(), pa.float64()),
        (pa.int32(), pa.float64()),
        (pa.decimal128(10, 2), pa.decimal128(12, 4)),
    ],
)
def test_a_widened_column_takes_the_wider_type(narrow, wide):
    assert evolve_struct(struct(qty=narrow), struct(qty=wide)) == struct(qty=wide)
    assert widening_changes(struct(qty=narrow), struct(qty=wide)) == [f"qty: {narrow} → {wide}"]


def test_int_to_long_from_avro_schemas_leaves_the_table_as_it_is():
    old = {"type": "record", "name": "R", "fields": [{"name": "qty", "type": "int"}]}
    new = {"type": "record", "name": "R", "fields": [{"name": "qty", "type": "long"}]}
    current, changed = value_arrow_type("AVRO", old), value_arrow_type("AVRO", new)
    assert evolve_struct(current, changed) == struct(qty=pa.int64())
    assert widening_changes(current, changed) == []  # Avro int is a 64-bit column already


def test_nested_widening_in_structs_lists_and_maps():
    current = struct(
        address=struct(zip=pa.int32()),
        lines=pa.list_(struct(qty=pa.int32())),
        scores=pa.map_(pa.string(), pa.float32()),
    )
    new = struct(
        address=struct(zip=pa.int64(), country=pa.string()),
        lines=pa.list_(struct(qty=pa.int64(), sku=pa.string())),
        scores=pa.map_(pa.string(), pa.float64()),
    )
    assert evolve_struct(current, new) == new
    assert widening_changes(current, new) == [
        "address.zip: int32 → int64",
        "new column address.country: string",
        "lines.element.qty: int32 → int64",
        "new column lines.element.sku: string",
        "scores.value: float → double",
    ]


def test_a_dropped_column_stays_in_place_and_nullable():
    current = pa.struct(
        [pa.field("id", pa.int64(), nullable=False), ("gone", pa.string()), ("qty", pa.int32())]
    )
    new = struct(id=pa.int64(), qty=pa.int32(), extra=pa.bool_())
    evolved = evolve_struct(current, new)
    assert evolved.names == ["id", "gone", "qty", "extra"]
    assert all(field.nullable for field in evolved)
    assert widening_changes(current, new) == ["new column extra: bool"]


def test_a_narrower_new_type_keeps_the_column():
    current = struct(qty=pa.int64(), price=pa.float64())
    new = struct(qty=pa.int32(), price=pa.float32())
    assert evolve_struct(current, new) == current
    assert widening_changes(current, new) == []


def test_the_same_type_changes_nothing():
    current = struct(a=pa.int32(), b=pa.list_(pa.string()))
    assert evolve_struct(current, current) == current
    assert widening_changes(current, current) == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (pa.string(), pa.int64()),
        (pa.int64(), pa.float64()),  # a long may not fit a double exactly
        (pa.date32(), pa.timestamp("us", tz="UTC")),
        (pa.timestamp("us", tz="UTC"), pa.timestamp("us")),
        (pa.decimal128(10, 2), pa.decimal128(10, 4)),  # fewer digits before the point
        (pa.list_(pa.int32()), pa.int32()),
        (struct(a=pa.int32()), pa.string()),
    ],
)
def test_other_type_changes_are_refused_naming_field_and_types(old, new):
    with pytest.raises(IncompatibleLayoutError) as raised:
        evolve_struct(struct(outer=struct(col=old)), struct(outer=struct(col=new)))
    assert raised.value.code == "incompatible_layout"
    assert f"outer.col cannot change from {old} to {new}" in raised.value.message
    with pytest.raises(IncompatibleLayoutError):
        widening_changes(struct(col=old), struct(col=new))


def test_a_map_whose_key_type_changes_is_refused():
    with pytest.raises(IncompatibleLayoutError, match="m cannot change its keys"):
        evolve_struct(
            struct(m=pa.map_(pa.string(), pa.int32())), struct(m=pa.map_(pa.int32(), pa.int32()))
        )
