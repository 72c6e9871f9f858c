"""Log records as lake rows: the stored Arrow columns plus ``partition`` and ``offset``.

Offsets are implicit in the log (a batch's base offset plus the row number); in the lake they
are a column, because a Parquet file has no other place to keep them. Timestamps go from the
log's int64 milliseconds to Delta's ``timestamp`` (microseconds, UTC).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_log.lake.layout import LAKE_SCHEMA, MICROS_PER_MILLI

_TIMESTAMP_TYPE = LAKE_SCHEMA.field("timestamp").type


def to_lake_table(
    pieces: list[pa.RecordBatch], partition: int, first_offsets: list[int]
) -> pa.Table:
    """Stored batches (the log's RECORD_SCHEMA), the one at ``i`` numbered densely from
    ``first_offsets[i]``, as one lake table.

    Converted as a whole rather than batch by batch: a range of a slowly written partition
    holds thousands of one-record batches, and a handful of Arrow calls per batch would hold
    the interpreter lock that long in the exporter's thread, delaying the node's event loop
    (its acks) behind it."""
    records = pa.Table.from_batches(pieces, schema=pieces[0].schema)
    rows = records.num_rows
    timestamps = pc.multiply(records.column("timestamp"), MICROS_PER_MILLI)
    return pa.Table.from_arrays(
        [
            pa.array(np.full(rows, partition, dtype=np.int32)),
            pa.array(_offsets(pieces, first_offsets)),
            timestamps.cast(_TIMESTAMP_TYPE),
            records.column("key"),
            records.column("value"),
            records.column("headers"),
            records.column("subject"),
        ],
        schema=LAKE_SCHEMA,
    )


def _offsets(pieces: list[pa.RecordBatch], first_offsets: list[int]) -> np.ndarray:
    """Every row's offset: one range when the pieces follow each other (the usual case)."""
    total = sum(piece.num_rows for piece in pieces)
    start = first_offsets[0]
    if first_offsets[-1] + pieces[-1].num_rows - start == total:
        return np.arange(start, start + total, dtype=np.int64)
    return np.concatenate(
        [
            np.arange(first, first + piece.num_rows, dtype=np.int64)
            for piece, first in zip(pieces, first_offsets, strict=True)
        ]
    )
