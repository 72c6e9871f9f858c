"""Which lake rows are tombstones (a key's deletion: a record without a value), in an untyped
table and in a typed one alike, for key compaction's delete retention.

An untyped row is a tombstone when its ``value`` is empty (or null). A typed table may have no
``value`` column at all (the raw value is kept only when asked) or one that is null in rows
exported without it: there a row is a tombstone when it also has no ``schema_id`` (no value was
decoded) and no ``invalid_value`` (no bytes were kept), which is exactly an empty value.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_log.lake.typed_layout import INVALID_VALUE_COLUMN, RAW_VALUE_COLUMN, SCHEMA_ID_COLUMN


def tombstones(batch: pa.RecordBatch) -> np.ndarray:
    """A boolean per row of ``batch``: whether it is a tombstone."""
    names = batch.schema.names
    empty = np.ones(batch.num_rows, dtype=bool)
    if RAW_VALUE_COLUMN in names:
        value = batch.column(RAW_VALUE_COLUMN)
        no_value = pc.or_kleene(pc.is_null(value), pc.equal(pc.binary_length(value), 0))
        empty &= pc.fill_null(no_value, True).to_numpy(zero_copy_only=False)
    for name in (SCHEMA_ID_COLUMN, INVALID_VALUE_COLUMN):
        if name in names:
            empty &= pc.is_null(batch.column(name)).to_numpy(zero_copy_only=False)
    return empty
