"""Row conditions a read applies itself (from pushed-down filters): time bounds and keys.

They only ever remove rows Spark would remove anyway: the pushdown reader hands every filter
back to Spark as well, so these exist to skip work (Parquet row groups by their timestamp
statistics, rows before they cross into the JVM), never to decide a result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from datasource.schema import TIMESTAMP_TYPE
from datasource.value_filter import ValueCondition


@dataclass(frozen=True)
class RowFilter:
    min_timestamp_us: int | None = None
    """Inclusive lower bound on ``timestamp`` (µs since the epoch, UTC)."""
    max_timestamp_us: int | None = None
    """Inclusive upper bound on ``timestamp``."""
    keys: frozenset[bytes] | None = None
    """Only rows whose key is one of these (None: any key)."""
    values: tuple[ValueCondition, ...] = ()
    """Conditions on a typed read's value columns: they only rule out row groups."""

    @property
    def empty(self) -> bool:
        return self.min_timestamp_us is None and self.max_timestamp_us is None and self.keys is None

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` (with a ``timestamp`` and a ``key`` column) without the rows that fail."""
        if self.empty or batch.num_rows == 0:
            return batch
        timestamps = batch.column("timestamp").cast(TIMESTAMP_TYPE)
        masks: list[pa.Array] = []
        if self.min_timestamp_us is not None:
            masks.append(pc.greater_equal(timestamps, _ts(self.min_timestamp_us)))
        if self.max_timestamp_us is not None:
            masks.append(pc.less_equal(timestamps, _ts(self.max_timestamp_us)))
        if self.keys is not None:
            keys = pa.array(sorted(self.keys), pa.binary())
            masks.append(pc.fill_null(pc.is_in(batch.column("key"), value_set=keys), False))
        mask = masks[0]
        for more in masks[1:]:
            mask = pc.and_(mask, more)
        return batch.filter(mask)

    def may_match_file(self, min_timestamp_us: int | None, max_timestamp_us: int | None) -> bool:
        """Whether a file with these timestamp statistics can hold a matching row."""
        too_old = (
            self.min_timestamp_us is not None
            and max_timestamp_us is not None
            and max_timestamp_us < self.min_timestamp_us
        )
        too_new = (
            self.max_timestamp_us is not None
            and min_timestamp_us is not None
            and min_timestamp_us > self.max_timestamp_us
        )
        return not (too_old or too_new)

    def may_match_values(self, statistics: Callable[[str], tuple[object, object]]) -> bool:
        """Whether a row group can hold a row the value conditions accept (``statistics``:
        a column path's minimum and maximum in it, None when unknown)."""
        return all(c.may_match(*statistics(c.column)) for c in self.values)


def _ts(micros: int) -> pa.Scalar:
    return pa.scalar(micros, TIMESTAMP_TYPE)
