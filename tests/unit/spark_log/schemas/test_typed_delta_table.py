"""Typed value columns in a Delta table: written with deltalake, read back with deltalake,
Polars and DuckDB with their types intact, a schema change that adds a column appended with
``schema_mode="merge"``, and what deltalake does (and does not do) with a widened type."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal

import duckdb
import fastavro
import polars as pl
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from spark_log.schemas.arrow_types import value_arrow_type
from spark_log.schemas.arrow_values import values_to_arrow
from spark_log.schemas.evolution import evolve_struct

ADDRESS = {
    "type": "record",
    "name": "Address",
    "fields": [{"name": "zip", "type": "int"}, {"name": "city", "type": "string"}],
}
ORDER_V1 = {
    "type": "record",
    "name": "Order",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "qty", "type": "int"},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {
            "name": "amount",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2},
        },
        {"name": "address", "type": ADDRESS},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
    ],
}
ORDER_V2 = {
    **ORDER_V1,
    "fields": [*ORDER_V1["fields"], {"name": "note", "type": ["null", "string"], "default": None}],
}
AT = dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=dt.UTC)


def order(n, **extra):
    return {
        "id": n,
        "qty": n * 10,
        "at": AT + dt.timedelta(seconds=n),
        "day": dt.date(2024, 1, n),
        "amount": Decimal(f"{n}.25"),
        "address": {"zip": 75000 + n, "city": f"city{n}"},
        "tags": [f"t{n}", "x"],
        "attrs": {"k": n},
        **extra,
    }


def decoded(document, values):
    parsed = fastavro.parse_schema(document)
    out = []
    for value in values:
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, parsed, value)
        buffer.seek(0)
        out.append(fastavro.schemaless_reader(buffer, parsed, None))
    return out


def lake_table(offsets, document, values, value_type):
    """Lake rows: an offset column beside the value's fields as top-level columns."""
    column = values_to_arrow(decoded(document, values), value_type, "AVRO", document)
    arrays = [pa.array(offsets, pa.int64()), *column.flatten()]
    return pa.Table.from_arrays(arrays, names=["offset", *value_type.names])


def test_typed_columns_survive_delta_and_read_in_deltalake_polars_and_duckdb(tmp_path):
    uri = str(tmp_path / "orders")
    v1 = value_arrow_type("AVRO", ORDER_V1)
    write_deltalake(uri, lake_table([0, 1], ORDER_V1, [order(1), order(2)], v1))

    table = DeltaTable(uri)
    schema = pa.schema(table.schema().to_arrow())
    assert schema.field("at").type == pa.timestamp("us", tz="UTC")
    assert schema.field("amount").type == pa.decimal128(12, 2)
    assert schema.field("address").type == pa.struct([("zip", pa.int64()), ("city", pa.string())])
    rows = table.to_pyarrow_table().sort_by("offset").to_pylist()
    assert rows[0]["at"] == AT + dt.timedelta(seconds=1)
    assert rows[0]["amount"] == Decimal("1.25")
    assert rows[1]["address"] == {"zip": 75002, "city": "city2"}
    assert rows[1]["tags"] == ["t2", "x"]
    assert rows[1]["attrs"] == [("k", 2)]

    frame = pl.read_delta(uri).sort("offset")
    assert frame.schema["at"] == pl.Datetime("us", "UTC")
    assert frame.schema["day"] == pl.Date
    assert frame.schema["amount"] == pl.Decimal(12, 2)
    assert frame.schema["address"] == pl.Struct({"zip": pl.Int64, "city": pl.String})
    assert frame.schema["tags"] == pl.List(pl.String)
    assert frame["amount"].to_list() == [Decimal("1.25"), Decimal("2.25")]
    assert frame["address"].struct.field("zip").to_list() == [75001, 75002]

    files = ", ".join(f"'{path}'" for path in DeltaTable(uri).file_uris())
    with duckdb.connect() as con:  # DuckDB reads the Parquet files of the snapshot itself
        relation = con.sql(f'select * from read_parquet([{files}]) order by "offset"')
        types = dict(zip(relation.columns, map(str, relation.types), strict=True))
        got = con.sql(
            """select epoch_us("at"), amount, address.city, tags[1], attrs['k'] """
            f'from read_parquet([{files}]) order by "offset"'
        ).fetchall()
    assert types["at"] == "TIMESTAMP WITH TIME ZONE"
    assert types["amount"] == "DECIMAL(12,2)"
    assert types["day"] == "DATE"
    assert types["address"] == "STRUCT(zip BIGINT, city VARCHAR)"
    assert types["attrs"] == "MAP(VARCHAR, BIGINT)"
    first_us = int((AT + dt.timedelta(seconds=1)).timestamp() * 1_000_000)
    assert got[0] == (first_us, Decimal("1.25"), "city1", "t1", 1)


def test_an_added_column_is_appended_with_schema_mode_merge(tmp_path):
    uri = str(tmp_path / "orders")
    v1 = value_arrow_type("AVRO", ORDER_V1)
    write_deltalake(uri, lake_table([0], ORDER_V1, [order(1)], v1))
    evolved = evolve_struct(v1, value_arrow_type("AVRO", ORDER_V2))
    batch = lake_table([1], ORDER_V2, [order(2, note="late")], evolved)
    write_deltalake(uri, batch, mode="append", schema_mode="merge")

    table = DeltaTable(uri)
    assert pa.schema(table.schema().to_arrow()).names == ["offset", *evolved.names]
    rows = table.to_pyarrow_table().sort_by("offset").to_pylist()
    assert [(row["offset"], row["note"]) for row in rows] == [(0, None), (1, "late")]
    frame = pl.read_delta(uri).sort("offset")
    assert frame["note"].to_list() == [None, "late"]


def test_deltalake_does_not_widen_a_column_on_append(tmp_path):
    """deltalake keeps the column's type on a merge append: the wider values are cast down,
    and one that does not fit refuses the whole write. A widening therefore needs the table
    rewritten (overwrite with ``schema_mode="overwrite"``), not an append."""
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"qty": pa.array([1], pa.int32())}))
    wider = pa.table({"qty": pa.array([2], pa.int64())})
    write_deltalake(uri, wider, mode="append", schema_mode="merge")
    assert pa.schema(DeltaTable(uri).schema().to_arrow()).field("qty").type == pa.int32()
    too_big = pa.table({"qty": pa.array([2**40], pa.int64())})
    with pytest.raises(Exception, match="Can't cast value 1099511627776 to type Int32"):
        write_deltalake(uri, too_big, mode="append", schema_mode="merge")

    widened = DeltaTable(uri).to_pyarrow_table().cast(pa.schema([("qty", pa.int64())]))
    write_deltalake(uri, widened, mode="overwrite", schema_mode="overwrite")
    write_deltalake(uri, too_big, mode="append")
    table = DeltaTable(uri)
    assert pa.schema(table.schema().to_arrow()).field("qty").type == pa.int64()
    assert sorted(table.to_pyarrow_table()["qty"].to_pylist()) == [1, 2, 2**40]
