"""The rows a sink writes: Kafka's sink columns, checked, normalised and routed to partitions.

``value`` is required; ``key``, ``headers`` and ``partition`` are optional; key and value may be
binary or string, as in Spark's Kafka sink; other columns are ignored. A row goes to its
``partition`` when given, else to its key's partition (``partition_for_key``, the mapping every
Liftlog client uses), else round robin. All of it is columnar: rows never become Python objects
except keys, which are hashed one by one.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructType,
)

from datasource.errors import PublishError, SchemaError
from spark_log.log.batch import HEADERS_TYPE
from spark_log.partitioner import partition_for_key

_TEXT_OR_BYTES = (BinaryType, StringType)
_INTEGERS = (IntegerType, LongType, ShortType)
CHUNK_MAX_ROWS = 10_000
"""Rows per producer batch at most (one NATS message, one ack)."""
CHUNK_MAX_BYTES = 4 * 1024 * 1024
ROW_OVERHEAD_BYTES = 64
"""Arrow offsets, validity and header framing per row, for the size estimate."""


def check_sink_schema(schema: StructType) -> None:
    """Fail before any task runs when the DataFrame cannot be published."""
    fields = {f.name: f.dataType for f in schema.fields}
    if "value" not in fields:
        raise SchemaError(
            f"the liftlog sink needs a 'value' column (binary or string); got {schema.names}"
        )
    _check(fields, "value", _TEXT_OR_BYTES, "binary or string")
    check_record_columns(schema)


def check_record_columns(schema: StructType) -> None:
    """``key``, ``partition`` and ``headers``, when present, have types a record takes."""
    fields = {f.name: f.dataType for f in schema.fields}
    _check(fields, "key", _TEXT_OR_BYTES, "binary or string")
    _check(fields, "partition", _INTEGERS, "an integer")
    headers = fields.get("headers")
    if headers is not None and not _is_headers_type(headers):
        raise SchemaError(
            "column 'headers' must be array<struct<key: string, value: binary or string>>; "
            f"got {headers.simpleString()}"
        )


def _check(fields: dict[str, DataType], name: str, types: tuple[type, ...], what: str) -> None:
    data_type = fields.get(name)
    if data_type is not None and not isinstance(data_type, types):
        raise SchemaError(f"column {name!r} must be {what}; got {data_type.simpleString()}")


def _is_headers_type(data_type: DataType) -> bool:
    if not isinstance(data_type, ArrayType) or not isinstance(data_type.elementType, StructType):
        return False
    inner = {f.name: f.dataType for f in data_type.elementType.fields}
    return (
        set(inner) == {"key", "value"}
        and isinstance(inner["key"], StringType)
        and isinstance(inner["value"], _TEXT_OR_BYTES)
    )


def producer_columns(batch: pa.RecordBatch) -> pa.Table:
    """``value``, ``key`` and ``headers`` as a producer batch takes them (binary, HEADERS_TYPE)."""
    names = batch.schema.names
    count = batch.num_rows
    value = batch.column("value").cast(pa.binary())
    if value.null_count:
        raise PublishError("the liftlog sink cannot publish a row whose value is null")
    key = batch.column("key").cast(pa.binary()) if "key" in names else pa.nulls(count, pa.binary())
    headers = (
        batch.column("headers").cast(HEADERS_TYPE)
        if "headers" in names
        else pa.nulls(count, HEADERS_TYPE)
    )
    return pa.table({"key": key, "value": value, "headers": headers})


def target_partitions(
    batch: pa.RecordBatch, keys: pa.Array, partitions: int, round_robin_from: int
) -> np.ndarray:
    """The partition of every row: explicit, else by key, else round robin."""
    count = batch.num_rows
    targets = (np.arange(count, dtype=np.int64) + round_robin_from) % partitions
    if keys.null_count < count:
        for i, key in enumerate(keys.to_pylist()):
            if key is not None:
                targets[i] = partition_for_key(key, partitions)
    if "partition" in batch.schema.names:
        explicit = batch.column("partition")
        if explicit.null_count < count:
            given = pc.fill_null(explicit.cast(pa.int64()), -1).to_numpy()
            bad = given[(given >= partitions) | (given < -1)]
            if bad.size:
                raise PublishError(
                    f"row partition {int(bad[0])} does not exist: the stream has {partitions}"
                )
            targets = np.where(given >= 0, given, targets)
    return targets


def by_partition(table: pa.Table, targets: np.ndarray) -> Iterator[tuple[int, pa.Table]]:
    """Rows per target partition, in their original order."""
    for partition in np.unique(targets):
        indices = np.flatnonzero(targets == partition)
        yield int(partition), table.take(pa.array(indices))


def chunk_rows(table: pa.Table, max_bytes: int) -> Iterator[pa.Table]:
    """Consecutive slices of at most CHUNK_MAX_ROWS rows and about ``max_bytes`` each (a row
    larger than that goes alone); the cuts depend only on the rows, so a retried task cuts
    exactly where the first attempt did."""
    sizes = (
        pc.fill_null(pc.binary_length(table.column("value")), 0).to_numpy(zero_copy_only=False)
        + pc.fill_null(pc.binary_length(table.column("key")), 0).to_numpy(zero_copy_only=False)
        + ROW_OVERHEAD_BYTES
    )
    start, count = 0, table.num_rows
    while start < count:
        cumulative = np.cumsum(sizes[start : start + CHUNK_MAX_ROWS])
        rows = max(1, int(np.searchsorted(cumulative, max_bytes, side="right")))
        yield table.slice(start, rows)
        start += rows
