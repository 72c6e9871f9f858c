"""Sink rows: schema checks, routing (explicit, key, round robin) and deterministic chunks."""

from __future__ import annotations

import zlib

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DoubleType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

from datasource.errors import PublishError, SchemaError
from datasource.sink_rows import (
    by_partition,
    check_sink_schema,
    chunk_rows,
    producer_columns,
    target_partitions,
)

HEADERS = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", StringType())])
)


def test_schema_checks():
    check_sink_schema(
        StructType([StructField("value", StringType()), StructField("headers", HEADERS)])
    )
    with pytest.raises(SchemaError, match="needs a 'value'"):
        check_sink_schema(StructType([StructField("payload", BinaryType())]))
    with pytest.raises(SchemaError, match="'key' must be"):
        check_sink_schema(
            StructType([StructField("value", BinaryType()), StructField("key", DoubleType())])
        )
    check_sink_schema(
        StructType([StructField("value", BinaryType()), StructField("partition", IntegerType())])
    )


def test_routing_explicit_then_key_then_round_robin():
    batch = pa.RecordBatch.from_pydict(
        {
            "value": pa.array(["a", "b", "c", "d"]),
            "key": pa.array(["x", None, None, "y"]),
            "partition": pa.array([None, 1, None, 2], pa.int32()),
        }
    )
    table = producer_columns(batch)
    assert table.column("value").type == pa.binary()
    targets = target_partitions(batch, table.column("key").combine_chunks(), 3, 0)
    assert targets.tolist() == [zlib.crc32(b"x") % 3, 1, 2, 2]
    groups = dict(by_partition(table, targets))
    assert groups[2].column("value").to_pylist() == [b"c", b"d"]  # order kept


def test_bad_rows_fail_the_task():
    with pytest.raises(PublishError, match="partition 3 does not exist"):
        batch = pa.RecordBatch.from_pydict({"value": ["a"], "partition": pa.array([3], pa.int64())})
        target_partitions(batch, pa.nulls(1, pa.binary()), 3, 0)
    with pytest.raises(PublishError, match="null"):
        producer_columns(pa.RecordBatch.from_pydict({"value": pa.array([None], pa.binary())}))


def test_chunks_are_bounded_and_deterministic():
    values = [b"x" * (10 + i % 50) for i in range(25_000)]
    table = producer_columns(pa.RecordBatch.from_pydict({"value": values}))
    chunks = list(chunk_rows(table, max_bytes=50_000))
    assert sum(c.num_rows for c in chunks) == 25_000
    assert all(c.num_rows <= 10_000 for c in chunks)
    assert [c.num_rows for c in chunks] == [c.num_rows for c in chunk_rows(table, 50_000)]
    big = producer_columns(pa.RecordBatch.from_pydict({"value": [b"y" * 100, b"z" * 100]}))
    assert [c.num_rows for c in chunk_rows(big, max_bytes=10)] == [1, 1]
    assert np.array_equal(
        np.concatenate([c.column("value").to_numpy(zero_copy_only=False) for c in chunks]),
        np.array(values, dtype=object),
    )
