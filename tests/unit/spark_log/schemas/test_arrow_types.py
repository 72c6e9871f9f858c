"""Registered schemas as Arrow types: every Avro and JSON Schema mapping rule, nesting,
nullability, named types and $refs, and recursive schemas refused naming the field."""

from __future__ import annotations

import pyarrow as pa
import pytest

from spark_log.schemas.arrow_types import value_arrow_type
from spark_log.schemas.layout_errors import UnsupportedSchemaError

UTC_US = pa.timestamp("us", tz="UTC")


def avro_field_type(field_schema):
    """The Arrow type of one field of a one-field record."""
    document = {"type": "record", "name": "R", "fields": [{"name": "f", "type": field_schema}]}
    struct = value_arrow_type("AVRO", document)
    return struct.field("f").type


@pytest.mark.parametrize(
    ("avro", "arrow"),
    [
        ("string", pa.string()),
        ("int", pa.int64()),  # 64-bit from the start: int→long never changes the table
        ("long", pa.int64()),
        ("float", pa.float64()),  # and float→double neither
        ("double", pa.float64()),
        ("boolean", pa.bool_()),
        ("bytes", pa.binary()),
        ("null", pa.null()),
        ({"type": "string"}, pa.string()),
        ({"type": "fixed", "name": "F", "size": 4}, pa.binary()),
        ({"type": "enum", "name": "E", "symbols": ["A", "B"]}, pa.string()),
        ({"type": "array", "items": "int"}, pa.list_(pa.int64())),
        ({"type": "map", "values": "double"}, pa.map_(pa.string(), pa.float64())),
        (["null", "long"], pa.int64()),
        (["long", "null"], pa.int64()),
        (["string"], pa.string()),
    ],
)
def test_avro_types_map_to_arrow(avro, arrow):
    assert avro_field_type(avro) == arrow


@pytest.mark.parametrize(
    ("logical", "underlying", "arrow"),
    [
        ("timestamp-millis", "long", UTC_US),
        ("timestamp-micros", "long", UTC_US),
        ("local-timestamp-millis", "long", pa.timestamp("us")),
        ("local-timestamp-micros", "long", pa.timestamp("us")),
        ("date", "int", pa.date32()),
        ("time-millis", "int", pa.int64()),  # µs since midnight: Delta has no time type
        ("time-micros", "long", pa.int64()),
        ("uuid", "string", pa.string()),
        ("timestamp-nanos", "long", pa.int64()),  # unknown to us: the underlying type
        ("date", "string", pa.string()),  # on the wrong type: ignored, as Avro says
    ],
)
def test_avro_logical_types_map_to_arrow(logical, underlying, arrow):
    assert avro_field_type({"type": underlying, "logicalType": logical}) == arrow


def test_avro_decimals_on_bytes_and_fixed():
    on_bytes = {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3}
    on_fixed = {
        "type": "fixed",
        "name": "Money",
        "size": 8,
        "logicalType": "decimal",
        "precision": 18,
        "scale": 2,
    }
    assert avro_field_type(on_bytes) == pa.decimal128(12, 3)
    assert avro_field_type(on_fixed) == pa.decimal128(18, 2)
    no_scale = {"type": "bytes", "logicalType": "decimal", "precision": 5}
    assert avro_field_type(no_scale) == pa.decimal128(5, 0)


def test_avro_decimals_wider_than_delta_are_text_and_invalid_ones_bytes():
    wide = {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 2}
    assert avro_field_type(wide) == pa.string()
    invalid = {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 6}
    assert avro_field_type(invalid) == pa.binary()


def test_avro_record_fields_are_all_nullable_in_order():
    document = {
        "type": "record",
        "name": "Order",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "note", "type": ["null", "string"], "default": None},
            {"name": "qty", "type": "int"},
        ],
    }
    struct = value_arrow_type("AVRO", document)
    assert [(f.name, f.type, f.nullable) for f in struct] == [
        ("id", pa.int64(), True),
        ("note", pa.string(), True),
        ("qty", pa.int64(), True),
    ]


def test_avro_nested_records_arrays_and_maps():
    document = {
        "type": "record",
        "name": "Order",
        "namespace": "shop",
        "fields": [
            {
                "name": "address",
                "type": {
                    "type": "record",
                    "name": "Address",
                    "fields": [{"name": "zip", "type": "int"}, {"name": "city", "type": "string"}],
                },
            },
            {
                "name": "lines",
                "type": {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": "Line",
                        "fields": [
                            {"name": "sku", "type": "string"},
                            {"name": "tags", "type": {"type": "map", "values": "string"}},
                        ],
                    },
                },
            },
            {"name": "billing", "type": ["null", "Address"]},  # a reference by short name
            {"name": "shipping", "type": "shop.Address"},  # and by full name
        ],
    }
    address = pa.struct([("zip", pa.int64()), ("city", pa.string())])
    line = pa.struct([("sku", pa.string()), ("tags", pa.map_(pa.string(), pa.string()))])
    assert value_arrow_type("AVRO", document) == pa.struct(
        [
            ("address", address),
            ("lines", pa.list_(line)),
            ("billing", address),
            ("shipping", address),
        ]
    )


def test_avro_union_of_several_types_is_a_struct_named_by_branch_type():
    document = {
        "type": "record",
        "name": "R",
        "fields": [
            {
                "name": "u",
                "type": [
                    "null",
                    "string",
                    "long",
                    {"type": "record", "name": "a.Point", "fields": [{"name": "x", "type": "int"}]},
                    {"type": "array", "items": "int"},
                ],
            }
        ],
    }
    assert value_arrow_type("AVRO", document).field("u").type == pa.struct(
        [
            ("string", pa.string()),
            ("long", pa.int64()),
            ("Point", pa.struct([("x", pa.int64())])),
            ("array", pa.list_(pa.int64())),
        ]
    )


def test_avro_union_branches_with_clashing_short_names_use_full_names():
    def point(namespace):
        return {
            "type": "record",
            "name": "Point",
            "namespace": namespace,
            "fields": [{"name": "x", "type": "int"}],
        }

    struct = value_arrow_type("AVRO", [point("a"), point("b")])
    assert struct.field("value").type.names == ["a_Point", "b_Point"]


@pytest.mark.parametrize(
    ("document", "arrow"),
    [
        ("string", pa.string()),
        ({"type": "array", "items": "long"}, pa.list_(pa.int64())),
        (["null", "double"], pa.float64()),
        ({"type": "enum", "name": "E", "symbols": ["A"]}, pa.string()),
    ],
)
def test_avro_non_record_top_level_is_one_field_named_value(document, arrow):
    assert value_arrow_type("AVRO", document) == pa.struct([("value", arrow)])


def test_avro_recursive_record_is_refused_naming_the_field():
    document = {
        "type": "record",
        "name": "Node",
        "fields": [
            {"name": "label", "type": "string"},
            {"name": "children", "type": {"type": "array", "items": "Node"}},
        ],
    }
    with pytest.raises(UnsupportedSchemaError, match=r"children.*Node") as raised:
        value_arrow_type("AVRO", document)
    assert raised.value.code == "unsupported_schema"


def test_avro_a_record_used_twice_side_by_side_is_not_recursive():
    document = {
        "type": "record",
        "name": "Pair",
        "fields": [
            {"name": "a", "type": {"type": "record", "name": "X", "fields": []}},
            {"name": "b", "type": "X"},
        ],
    }
    assert value_arrow_type("AVRO", document).names == ["a", "b"]


def test_unknown_avro_type_and_unknown_schema_type_are_refused():
    with pytest.raises(UnsupportedSchemaError, match="Nowhere"):
        avro_field_type("Nowhere")
    with pytest.raises(UnsupportedSchemaError, match="PROTOBUF"):
        value_arrow_type("PROTOBUF", "syntax = 'proto3';")


def json_property_type(property_schema, **extra):
    document = {"type": "object", "properties": {"f": property_schema}, **extra}
    return value_arrow_type("JSON", document).field("f").type


@pytest.mark.parametrize(
    ("schema", "arrow"),
    [
        ({"type": "string"}, pa.string()),
        ({"type": "string", "format": "date-time"}, UTC_US),
        ({"type": "string", "format": "date"}, pa.date32()),
        ({"type": "string", "format": "uuid"}, pa.string()),
        ({"type": "integer"}, pa.int64()),
        ({"type": "number"}, pa.float64()),
        ({"type": "boolean"}, pa.bool_()),
        ({"enum": ["a", "b"]}, pa.string()),
        ({"type": "string", "enum": ["a", "b"]}, pa.string()),
        ({"type": ["integer", "null"]}, pa.int64()),
        ({"type": ["null", "string"], "format": "date"}, pa.date32()),
        ({"type": "array", "items": {"type": "number"}}, pa.list_(pa.float64())),
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, pa.int64()),
    ],
)
def test_json_schema_types_map_to_arrow(schema, arrow):
    assert json_property_type(schema) == arrow


@pytest.mark.parametrize(
    "schema",
    [
        {"oneOf": [{"type": "integer"}, {"type": "string"}]},
        {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        {"type": "object"},  # an open map
        {"type": "object", "additionalProperties": {"type": "integer"}},
        {"type": ["integer", "string"]},
        {"enum": ["a", 1]},
        {},
        True,
        {"type": "array", "items": [{"type": "integer"}, {"type": "string"}]},
        {"$ref": "https://example.com/other.json"},
    ],
)
def test_json_schema_values_we_cannot_type_are_json_text(schema):
    assert json_property_type(schema) == pa.string()


def test_json_schema_array_without_items_holds_json_text():
    assert json_property_type({"type": "array"}) == pa.list_(pa.string())


def test_json_schema_object_fields_in_properties_order_nested_and_nullable():
    document = {
        "type": "object",
        "properties": {
            "zeta": {"type": "integer"},
            "alpha": {
                "type": ["object", "null"],
                "properties": {"n": {"type": "number"}, "when": {"type": "string"}},
            },
            "items": {
                "type": "array",
                "items": {"type": "object", "properties": {"sku": {"type": "string"}}},
            },
        },
        "required": ["zeta"],
    }
    struct = value_arrow_type("JSON", document)
    assert struct == pa.struct(
        [
            ("zeta", pa.int64()),
            ("alpha", pa.struct([("n", pa.float64()), ("when", pa.string())])),
            ("items", pa.list_(pa.struct([("sku", pa.string())]))),
        ]
    )
    assert all(field.nullable for field in struct)


@pytest.mark.parametrize("defs", ["$defs", "definitions"])
def test_json_schema_refs_to_definitions_are_resolved(defs):
    document = {
        "type": "object",
        "properties": {
            "home": {"$ref": f"#/{defs}/Address"},
            "work": {"$ref": f"#/{defs}/Address"},
        },
        defs: {
            "Address": {
                "type": "object",
                "properties": {"zip": {"$ref": f"#/{defs}/Zip"}},
            },
            "Zip": {"type": "integer"},
        },
    }
    address = pa.struct([("zip", pa.int64())])
    assert value_arrow_type("JSON", document) == pa.struct([("home", address), ("work", address)])


def test_json_schema_recursive_ref_is_refused_naming_the_field():
    document = {
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/Node"}},
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "label": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
            }
        },
    }
    with pytest.raises(UnsupportedSchemaError, match=r"tree\.children.*#/\$defs/Node"):
        value_arrow_type("JSON", document)


def test_json_schema_ref_pointing_nowhere_is_refused():
    with pytest.raises(UnsupportedSchemaError, match="Missing"):
        json_property_type({"$ref": "#/$defs/Missing"})


@pytest.mark.parametrize(
    ("document", "arrow"),
    [
        ({"type": "string"}, pa.string()),
        ({"type": "array", "items": {"type": "integer"}}, pa.list_(pa.int64())),
        ({"type": "object"}, pa.string()),  # an open map: JSON text
        ({"oneOf": [{"type": "integer"}, {"type": "string"}]}, pa.string()),
    ],
)
def test_json_schema_non_object_top_level_is_one_field_named_value(document, arrow):
    assert value_arrow_type("JSON", document) == pa.struct([("value", arrow)])
