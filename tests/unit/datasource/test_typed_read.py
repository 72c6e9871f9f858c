"""A typed read's plan, columns and rows, without a cluster: the layout planned from schema
versions, rows projected into Spark's exact Arrow schema, the schema a streaming query keeps,
and rows turned back into values for serialising."""

from __future__ import annotations

import json
from typing import cast

import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StringType

from datasource.errors import CorruptRecordsError, InvalidOptionError, SchemaChangedError
from datasource.lag import records_behind
from datasource.options import batch_options, sink_options, stream_options
from datasource.typed_checkpoint import SCHEMA_KEY, check_started_schema, started_ids, with_schema
from datasource.typed_datum import row_datums, value_columns
from datasource.typed_output import lake_rows, project
from datasource.typed_plan import (
    SchemaVersion,
    TypedRead,
    plain_type,
    typed_table_schema,
    value_binding,
)
from datasource.typed_schema import typed_arrow_schema, typed_lake_columns, typed_struct
from spark_log.client.schema_registry import RegistryClient
from spark_log.lake.layout import LAKE_SCHEMA
from spark_log.log.batch import HEADERS_TYPE
from spark_log.value_schema import ValueSchema

BASE = {"servers": "http://a:1", "stream": "orders"}
BINDING = ValueSchema(subject="orders-value")
V1 = SchemaVersion(1, 11, pa.struct([("id", pa.int64()), ("offset", pa.int64())]))
V2 = SchemaVersion(
    2, 12, pa.struct([("id", pa.int64()), ("offset", pa.int64()), ("note", pa.string())])
)
NO_REGISTRY = cast(RegistryClient, None)
"""Every version a check needs is in the plan: the registry is never asked."""


def typed(*versions: SchemaVersion, lake: pa.Schema | None = None) -> TypedRead:
    schema = typed_table_schema("orders", BINDING, versions, lake)
    return TypedRead("orders-value", False, versions, schema)


def test_value_format_option():
    assert batch_options(BASE).value_format is None
    assert stream_options({**BASE, "valueFormat": "TYPED"}).value_format == "typed"
    assert sink_options({**BASE, "valueformat": "binary"}).value_format == "binary"
    with pytest.raises(InvalidOptionError, match="typed or binary"):
        batch_options({**BASE, "valueFormat": "avro"})


def test_typed_is_the_default_of_a_bound_stream_only():
    assert value_binding("orders", BINDING, None) is BINDING
    assert value_binding("orders", BINDING, "binary") is None
    assert value_binding("orders", None, None) is None
    with pytest.raises(InvalidOptionError, match="stream orders has no value_schema"):
        value_binding("orders", None, "typed")


def test_the_layout_is_the_lakes_whether_or_not_the_table_exists():
    fresh = typed(V1, V2).table_schema
    assert fresh.names == [
        "partition",
        "offset",
        "timestamp",
        "key",
        "headers",
        "subject",
        "schema_id",
        "invalid_value",
        "id",
        "value_offset",
        "note",
    ]
    # a Delta table lists its partition column last and may report large types
    lake = pa.schema(
        [
            *(f for f in LAKE_SCHEMA if f.name not in ("partition", "value")),
            pa.field("schema_id", pa.int64()),
            pa.field("invalid_value", pa.binary()),
            pa.field("id", pa.int64()),
            pa.field("value_offset", pa.int64()),
            pa.field("partition", pa.int32()),
        ]
    )
    assert typed(V1, V2, lake=lake).table_schema.names == fresh.names


def test_a_column_the_lake_cannot_widen_is_a_clear_error():
    lake = typed(V1).table_schema
    wider = SchemaVersion(2, 12, pa.struct([("id", pa.float64()), ("offset", pa.int64())]))
    with pytest.raises(SchemaChangedError, match="valueFormat=binary"):
        typed(V1, wider, lake=lake)


def test_spark_columns_and_the_lake_columns_read():
    plan = typed(V1, V2)
    struct = typed_struct(plan, include_headers=False)
    assert "headers" not in struct.names and "stream" not in struct.names
    assert struct["id"].dataType == LongType() and struct["note"].dataType == StringType()
    assert not struct["offset"].nullable and struct["note"].nullable
    assert typed_lake_columns(plan, True)[-1] == "value"  # files written before the binding
    assert "partition" not in typed_lake_columns(plan, True)


def test_plain_types_fold_delta_variants():
    nested = pa.struct([("a", pa.large_string()), ("b", pa.large_list(pa.large_binary()))])
    assert plain_type(nested) == pa.struct([("a", pa.string()), ("b", pa.list_(pa.binary()))])


def test_rows_are_projected_into_sparks_schema():
    plan = typed(V1, V2)
    schema = typed_arrow_schema(plan, include_headers=False)
    fetched = pa.RecordBatch.from_pydict(
        {
            "offset": pa.array([3], pa.int64()),
            "timestamp": pa.array([1000], pa.timestamp("ms", tz="UTC")),
            "key": pa.array([None], pa.binary()),
            "value": pa.array([b"v"]),
            "subject": ["s"],
        }
    )
    rows = lake_rows(fetched, partition=2)
    assert rows.schema == LAKE_SCHEMA and rows.column("partition").to_pylist() == [2]
    assert rows.column("headers").type == HEADERS_TYPE
    batch = project(rows.append_column("id", pa.array([7], pa.int32())), schema)
    assert batch.schema.equals(schema)
    assert batch.column("id").to_pylist() == [7] and batch.column("note").to_pylist() == [None]
    broken = rows.set_column(6, "subject", pa.array([None], pa.string()))
    with pytest.raises(CorruptRecordsError, match="subject"):
        project(broken, schema)


def test_a_streaming_query_records_its_versions_and_keeps_them():
    offset = with_schema({"orders": {"0": 5}}, typed(V1))
    recorded = json.loads(json.dumps(offset))  # as Spark checkpoints it
    assert started_ids(recorded) == {11}
    assert records_behind({"latestOffset": recorded, "endOffset": recorded}) == {"orders": {0: 0}}
    check_started_schema("orders", recorded, typed(V1), NO_REGISTRY)  # unchanged
    same_columns = SchemaVersion(2, 12, V1.value_type)
    check_started_schema("orders", recorded, typed(V1, same_columns), NO_REGISTRY)
    with pytest.raises(SchemaChangedError) as failed:
        check_started_schema("orders", recorded, typed(V1, V2), NO_REGISTRY)
    message = failed.value.message
    assert "'orders-value'" in message and "version 2 (schema id 12)" in message
    assert "new column note: string" in message and "new checkpoint location" in message
    assert with_schema({"orders": {"0": 5}}, None) == {"orders": {"0": 5}}
    assert SCHEMA_KEY.startswith("$")


def test_rows_become_values_by_their_field_names():
    rows = pa.table(
        {
            "offset": [1, 2],
            "key": [b"k", None],
            "value_offset": [10, None],
            "attrs": pa.array([[("a", 1)], None], pa.map_(pa.string(), pa.int64())),
            "address": [{"zip": 1, "tags": None}, {"zip": None, "tags": ["x"]}],
        }
    )
    columns = value_columns(rows.schema)
    assert columns == [("value_offset", "offset"), ("attrs", "attrs"), ("address", "address")]
    assert row_datums(rows, columns) == [
        {"offset": 10, "attrs": {"a": 1}, "address": {"zip": 1}},
        {"address": {"tags": ["x"]}},
    ]
