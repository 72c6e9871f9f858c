"""A lake table to compact: exporter-shaped (several files per partition, each committed with
the partition's app transaction), random values, a fixed share of distinct keys."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from spark_log.lake.layout import LAKE_SCHEMA, PARTITION_COLUMN, app_id

BENCH_STREAM = "bench"
BASE_TIME_US = 1_700_000_000_000_000


@dataclass(frozen=True)
class TableShape:
    rows: int
    partitions: int
    files_per_partition: int
    key_ratio: float
    """Distinct keys per partition / records per partition."""
    value_bytes: int

    @property
    def rows_per_file(self) -> int:
        return self.rows // self.partitions // self.files_per_partition


def build_table(
    uri: Path | str,
    shape: TableShape,
    seed: int = 7,
    storage_options: dict[str, str] | None = None,
) -> int:
    """Create the table (a local path, or an object-store URI reached with
    ``storage_options``); return the number of rows written."""
    DeltaTable.create(
        str(uri),
        LAKE_SCHEMA,
        partition_by=[PARTITION_COLUMN],
        name=BENCH_STREAM,
        storage_options=storage_options,
    )
    rng = np.random.default_rng(seed)
    per_file = shape.rows_per_file
    keys_per_partition = max(1, int(per_file * shape.files_per_partition * shape.key_ratio))
    for f in range(shape.files_per_partition):
        start = f * per_file
        batches = [
            _rows(p, start, per_file, keys_per_partition, shape.value_bytes, rng)
            for p in range(shape.partitions)
        ]
        end = start + per_file
        write_deltalake(
            str(uri),
            pa.concat_tables(batches),
            mode="append",
            storage_options=storage_options,
            commit_properties=CommitProperties(
                app_transactions=[
                    Transaction(app_id(BENCH_STREAM, p), end) for p in range(shape.partitions)
                ]
            ),
        )
    return per_file * shape.files_per_partition * shape.partitions


def _rows(
    partition: int, start: int, n: int, keys: int, value_bytes: int, rng: np.random.Generator
) -> pa.Table:
    offsets = np.arange(start, start + n, dtype=np.int64)
    key_ids = rng.integers(0, keys, n)
    key_strings = np.char.mod("key-%010d", key_ids).astype("S14")
    value_offsets = np.arange(0, (n + 1) * value_bytes, value_bytes, dtype=np.int64)
    values = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(),
        n,
        [None, pa.py_buffer(value_offsets), pa.py_buffer(os.urandom(n * value_bytes))],
    ).cast(pa.binary())
    return pa.table(
        {
            "partition": pa.array(np.full(n, partition, dtype=np.int32)),
            "offset": offsets,
            "timestamp": pa.array(BASE_TIME_US + offsets, pa.timestamp("us", tz="UTC")),
            "key": pa.array(key_strings.tolist(), pa.binary()),
            "value": values,
            "headers": pa.nulls(n, LAKE_SCHEMA.field("headers").type),
            "subject": pa.array(["bench"] * n, pa.string()),
        },
        schema=LAKE_SCHEMA,
    )
