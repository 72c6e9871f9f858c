"""Decoded values as typed Arrow columns: Avro values round-tripped through fastavro's
schemaless writer and reader, JSON documents as json.loads gives them, null rows, unions,
JSON text, evolved table types, and bad values refused naming their column."""

from __future__ import annotations

import datetime as dt
import io
import json
import uuid
from decimal import Decimal

import fastavro
import pyarrow as pa
import pytest

from spark_log.schemas.arrow_types import value_arrow_type
from spark_log.schemas.arrow_values import values_to_arrow
from spark_log.schemas.evolution import evolve_struct
from spark_log.schemas.layout_errors import ValueLayoutError


def avro_round_trip(document, values):
    """Each value written with Avro's binary encoding and read back, as the exporter sees it."""
    parsed = fastavro.parse_schema(document)
    decoded = []
    for value in values:
        if value is None:
            decoded.append(None)
            continue
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, parsed, value)
        buffer.seek(0)
        decoded.append(fastavro.schemaless_reader(buffer, parsed, None))
    return decoded


def avro_column(document, values):
    decoded = avro_round_trip(document, values)
    return values_to_arrow(decoded, value_arrow_type("AVRO", document), "AVRO", document)


def record(*fields):
    return {"type": "record", "name": "R", "fields": [{"name": n, "type": t} for n, t in fields]}


def test_avro_primitives_round_trip():
    document = record(
        ("s", "string"),
        ("i", "int"),
        ("l", "long"),
        ("f", "float"),
        ("d", "double"),
        ("b", "boolean"),
        ("raw", "bytes"),
        ("e", {"type": "enum", "name": "Colour", "symbols": ["RED", "GREEN"]}),
        ("fx", {"type": "fixed", "name": "Four", "size": 4}),
    )
    value = {
        "s": "héllo",
        "i": -7,
        "l": 2**40,
        "f": 1.5,
        "d": 2.25,
        "b": True,
        "raw": b"\x00\xff",
        "e": "GREEN",
        "fx": b"abcd",
    }
    column = avro_column(document, [value])
    assert column.type == value_arrow_type("AVRO", document)
    assert column.to_pylist() == [value]


def test_avro_logical_types_round_trip_to_exact_arrow_values():
    document = record(
        ("ts_ms", {"type": "long", "logicalType": "timestamp-millis"}),
        ("ts_us", {"type": "long", "logicalType": "timestamp-micros"}),
        ("local", {"type": "long", "logicalType": "local-timestamp-micros"}),
        ("day", {"type": "int", "logicalType": "date"}),
        ("t_ms", {"type": "int", "logicalType": "time-millis"}),
        ("t_us", {"type": "long", "logicalType": "time-micros"}),
        ("price", {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}),
        (
            "total",
            {
                "type": "fixed",
                "name": "Total",
                "size": 8,
                "logicalType": "decimal",
                "precision": 18,
                "scale": 4,
            },
        ),
        ("id", {"type": "string", "logicalType": "uuid"}),
    )
    paris = dt.timezone(dt.timedelta(hours=2))
    ident = uuid.UUID("12345678-1234-5678-1234-567812345678")
    value = {
        "ts_ms": dt.datetime(2024, 5, 6, 9, 8, 7, 123000, tzinfo=paris),
        "ts_us": dt.datetime(2024, 5, 6, 7, 8, 7, 123456, tzinfo=dt.UTC),
        "local": dt.datetime(2024, 5, 6, 7, 8, 7, 654321),
        "day": dt.date(2024, 2, 29),
        "t_ms": dt.time(23, 59, 58, 999000),
        "t_us": dt.time(0, 0, 1, 1),
        "price": Decimal("1234567.89"),
        "total": Decimal("-0.0001"),
        "id": str(ident),
    }
    column = avro_column(document, [value])
    row = column.to_pylist()[0]
    instant = dt.datetime(2024, 5, 6, 7, 8, 7, 123000, tzinfo=dt.UTC)
    assert row["ts_ms"] == instant
    assert (
        column.field("ts_ms").cast(pa.int64())[0].as_py()
        == int(instant.timestamp()) * 10**6 + 123000
    )
    assert row["ts_us"] == value["ts_us"]
    assert row["local"] == value["local"]
    assert column.field("local").type.tz is None
    assert row["day"] == value["day"]
    assert row["t_ms"] == ((23 * 60 + 59) * 60 + 58) * 10**6 + 999000  # µs since midnight
    assert row["t_us"] == 1_000_001
    assert column.field("t_ms").type == column.field("t_us").type == pa.int64()
    assert row["price"] == Decimal("1234567.89")
    assert column.field("price").type == pa.decimal128(9, 2)
    assert row["total"] == Decimal("-0.0001")
    assert row["id"] == str(ident)


def test_avro_decimal_wider_than_delta_is_kept_as_exact_text():
    wide = {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 3}
    digits = Decimal("1234567890123456789012345678901234567.891")
    column = avro_column(record(("big", wide)), [{"big": digits}])
    assert column.to_pylist() == [{"big": "1234567890123456789012345678901234567.891"}]


def test_avro_nested_records_arrays_maps_and_nullable_fields():
    address = {
        "type": "record",
        "name": "Address",
        "fields": [{"name": "zip", "type": "int"}, {"name": "city", "type": ["null", "string"]}],
    }
    document = record(
        ("address", address),
        ("previous", {"type": "array", "items": "Address"}),
        ("scores", {"type": "map", "values": "long"}),
        ("note", ["null", "string"]),
    )
    values = [
        {
            "address": {"zip": 75001, "city": "Paris"},
            "previous": [{"zip": 1, "city": None}, {"zip": 2, "city": "Lyon"}],
            "scores": {"a": 1, "b": 2},
            "note": None,
        },
        {"address": {"zip": 3, "city": None}, "previous": [], "scores": {}, "note": "n"},
    ]
    rows = avro_column(document, values).to_pylist()
    assert rows[0]["address"] == {"zip": 75001, "city": "Paris"}
    assert rows[0]["previous"] == [{"zip": 1, "city": None}, {"zip": 2, "city": "Lyon"}]
    assert sorted(rows[0]["scores"]) == [("a", 1), ("b", 2)]  # Arrow maps are key/value pairs
    assert rows[0]["note"] is None
    assert rows[1]["previous"] == []
    assert rows[1]["scores"] == []
    assert rows[1]["note"] == "n"


def test_a_missing_value_is_a_null_row():
    document = record(("n", "long"))
    column = avro_column(document, [{"n": 1}, None, {"n": 3}])
    assert column.null_count == 1
    assert column.to_pylist() == [{"n": 1}, None, {"n": 3}]


def test_avro_union_of_several_types_sets_the_field_of_its_branch():
    point = {"type": "record", "name": "Point", "fields": [{"name": "x", "type": "int"}]}
    document = record(
        ("u", ["null", "string", "long", "double", point, {"type": "map", "values": "int"}]),
    )
    values = [{"u": "text"}, {"u": 5}, {"u": 2.5}, {"u": {"x": 9}}, {"u": None}, {"u": {"k": 1}}]
    rows = [row["u"] for row in avro_column(document, values).to_pylist()]
    empty = {"string": None, "long": None, "double": None, "Point": None, "map": None}
    assert rows == [
        {**empty, "string": "text"},
        {**empty, "long": 5},
        {**empty, "double": 2.5},
        {**empty, "Point": {"x": 9}},
        None,
        {**empty, "map": [("k", 1)]},
    ]


def test_avro_union_branches_with_logical_types_and_uuids():
    document = record(
        (
            "u",
            [
                "null",
                {"type": "string", "logicalType": "uuid"},
                {"type": "long", "logicalType": "timestamp-millis"},
            ],
        )
    )
    ident = uuid.uuid4()
    when = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    rows = avro_column(document, [{"u": str(ident)}, {"u": when}]).to_pylist()
    assert rows == [
        {"u": {"string": str(ident), "long": None}},
        {"u": {"string": None, "long": when}},
    ]


def test_avro_non_record_top_level_values_are_wrapped():
    document = {"type": "array", "items": {"type": "string", "logicalType": "uuid"}}
    ident = uuid.uuid4()
    column = avro_column(document, [[str(ident)], None, []])
    assert column.to_pylist() == [{"value": [str(ident)]}, None, {"value": []}]
    plain = avro_column("long", [1, None, 2**62])
    assert plain.to_pylist() == [{"value": 1}, None, {"value": 2**62}]


def test_decoded_values_are_not_changed_by_the_conversion():
    document = record(("id", {"type": "string", "logicalType": "uuid"}), ("n", "int"))
    decoded = avro_round_trip(document, [{"id": str(uuid.uuid4()), "n": 1}])
    before = dict(decoded[0])
    values_to_arrow(decoded, value_arrow_type("AVRO", document), "AVRO", document)
    assert decoded[0] == before
    assert isinstance(decoded[0]["id"], uuid.UUID)


def json_column(document, values):
    return values_to_arrow(values, value_arrow_type("JSON", document), "JSON", document)


ORDER = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "price": {"type": "number"},
        "at": {"type": "string", "format": "date-time"},
        "day": {"type": ["string", "null"], "format": "date"},
        "attrs": {"type": "object"},
        "choice": {"oneOf": [{"type": "integer"}, {"type": "string"}]},
        "lines": {
            "type": "array",
            "items": {"type": "object", "properties": {"sku": {"type": "string"}}},
        },
    },
}


def test_json_values_parse_dates_and_keep_untyped_values_as_sorted_json_text():
    document_text = json.dumps(
        {
            "id": 3.0,
            "price": 2,
            "at": "2024-05-06T09:08:07.5+02:00",
            "day": "2024-02-29",
            "attrs": {"z": 1, "a": [True, None]},
            "choice": "x",
            "lines": [{"sku": "A", "undeclared": 1}],
            "undeclared": "not a column",
        }
    )
    column = json_column(ORDER, [json.loads(document_text)])
    assert column.to_pylist() == [
        {
            "id": 3,
            "price": 2.0,
            "at": dt.datetime(2024, 5, 6, 7, 8, 7, 500000, tzinfo=dt.UTC),
            "day": dt.date(2024, 2, 29),
            "attrs": '{"a": [true, null], "z": 1}',
            "choice": '"x"',
            "lines": [{"sku": "A"}],
        }
    ]


def test_json_missing_properties_and_nulls_are_null_columns():
    rows = json_column(ORDER, [{"id": 1, "day": None, "attrs": None}, None]).to_pylist()
    assert rows == [
        {
            "id": 1,
            "price": None,
            "at": None,
            "day": None,
            "attrs": None,
            "choice": None,
            "lines": None,
        },
        None,
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-05-06T07:08:07Z", dt.datetime(2024, 5, 6, 7, 8, 7, tzinfo=dt.UTC)),
        (
            "2024-05-06 07:08:07.123456-01:00",
            dt.datetime(2024, 5, 6, 8, 8, 7, 123456, tzinfo=dt.UTC),
        ),
        ("2024-05-06T07:08:07", dt.datetime(2024, 5, 6, 7, 8, 7, tzinfo=dt.UTC)),  # no offset: UTC
    ],
)
def test_json_date_times_are_utc_instants(text, expected):
    assert json_column(ORDER, [{"at": text}]).field("at")[0].as_py() == expected


def test_json_non_object_top_level_values_are_wrapped():
    open_map = {"type": "object"}
    assert json_column(open_map, [{"b": 1, "a": 2}, None]).to_pylist() == [
        {"value": '{"a": 2, "b": 1}'},
        None,
    ]
    dates = {"type": "array", "items": {"type": "string", "format": "date"}}
    assert json_column(dates, [["2024-01-02"]]).to_pylist() == [{"value": [dt.date(2024, 1, 2)]}]


def test_an_invalid_date_time_is_refused_naming_its_column():
    with pytest.raises(ValueLayoutError, match=r"at: 'yesterday' is not an RFC 3339") as raised:
        json_column(ORDER, [{"at": "yesterday"}])
    assert raised.value.code == "value_layout"


def test_a_value_out_of_its_column_range_is_refused_naming_the_column():
    with pytest.raises(ValueLayoutError, match=r"^id: "):
        json_column(ORDER, [{"id": 1}, {"id": 2**70}])
    nested = {
        "type": "object",
        "properties": {"at": {"type": "string", "format": "date-time"}, "n": {"type": "integer"}},
    }
    with pytest.raises(ValueLayoutError, match=r"^n: "):
        json_column(nested, [{"at": "2024-01-01T00:00:00Z", "n": "seven"}])


def test_a_value_that_is_not_a_record_is_refused():
    with pytest.raises(ValueLayoutError, match=r"row 1: list is not a record"):
        json_column(ORDER, [{"id": 1}, [1, 2]])
    plain = {"type": "object", "properties": {"n": {"type": "integer"}}}
    with pytest.raises(ValueLayoutError, match=r"row 0: str is not a record"):
        json_column(plain, ["n"])


def test_values_of_an_older_schema_fill_an_evolved_table_type():
    old = record(("qty", "int"), ("name", "string"))
    new = record(("qty", "long"), ("price", ["null", "double"]))
    table_type = evolve_struct(value_arrow_type("AVRO", old), value_arrow_type("AVRO", new))
    decoded = avro_round_trip(old, [{"qty": 7, "name": "a"}])
    column = values_to_arrow(decoded, table_type, "AVRO", old)
    assert column.type == table_type
    assert column.field("qty").type == pa.int64()
    assert column.to_pylist() == [{"qty": 7, "name": "a", "price": None}]
    newer = avro_round_trip(new, [{"qty": 2**40, "price": 1.5}])
    assert values_to_arrow(newer, table_type, "AVRO", new).to_pylist() == [
        {"qty": 2**40, "name": None, "price": 1.5}
    ]


def test_a_bad_nested_value_is_refused_with_its_path():
    document = {
        "type": "object",
        "properties": {
            "lines": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"at": {"type": "string", "format": "date-time"}},
                },
            }
        },
    }
    good = {"lines": [{"at": "2024-01-01T00:00:00Z"}]}
    assert json_column(document, [good]).to_pylist() == [
        {"lines": [{"at": dt.datetime(2024, 1, 1, tzinfo=dt.UTC)}]}
    ]
    with pytest.raises(ValueLayoutError, match=r"lines\.element\.at: 'soon' is not"):
        json_column(document, [good, {"lines": [{"at": "soon"}]}])


def test_a_value_that_fits_no_union_branch_is_refused():
    document = record(("u", ["string", "long"]))
    struct_type = value_arrow_type("AVRO", document)
    with pytest.raises(ValueLayoutError, match=r"u: 1\.5 fits no branch"):
        values_to_arrow([{"u": 1.5}], struct_type, "AVRO", document)
