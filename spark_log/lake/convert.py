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


def to_lake_batch(records: pa.RecordBatch, partition: int, first_offset: int) -> pa.RecordBatch:
    """``records`` (the log's RECORD_SCHEMA) numbered densely from ``first_offset``."""
    rows = records.num_rows
    timestamps = pc.multiply(records.column("timestamp"), MICROS_PER_MILLI)
    return pa.RecordBatch.from_arrays(
        [
            pa.array(np.full(rows, partition, dtype=np.int32)),
            pa.array(np.arange(first_offset, first_offset + rows, dtype=np.int64)),
            timestamps.cast(_TIMESTAMP_TYPE),
            records.column("key"),
            records.column("value"),
            records.column("headers"),
            records.column("subject"),
        ],
        schema=LAKE_SCHEMA,
    )
