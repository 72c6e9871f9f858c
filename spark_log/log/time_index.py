"""The sparse time index: (max timestamp so far int64, relative offset uint32).

An entry (T, o) promises that every record in batches up to and including the batch starting
at offset o has a timestamp <= T. Timestamps need not be monotonic in the log (leader clocks
step), so the promise is about the running maximum, which is what makes a lookup safe: the
first record with timestamp >= ts cannot be at or before the last entry with T < ts.
"""

from __future__ import annotations

import struct
from bisect import bisect_left

from spark_log.log.batch import NO_TIMESTAMP
from spark_log.log.sparse_index import SparseIndex, non_decreasing, strictly_increasing


class TimeIndex(SparseIndex):
    """Keys are running-max timestamps, values absolute base offsets of indexed batches."""

    ENTRY = struct.Struct(">qI")

    def encode(self, key: int, value: int) -> bytes:
        return self.ENTRY.pack(key, value - self.base_offset)

    def decode(self, raw_key: int, raw_value: int) -> tuple[int, int]:
        return raw_key, self.base_offset + raw_value

    @property
    def last_timestamp(self) -> int:
        return self.keys[-1] if self.keys else NO_TIMESTAMP

    def maybe_append(self, max_timestamp_ms: int, offset: int) -> None:
        """Add an entry only when the running maximum grew (keys stay strictly increasing)."""
        if max_timestamp_ms > self.last_timestamp:
            self.append(max_timestamp_ms, offset)

    def offset_before(self, timestamp_ms: int) -> int | None:
        """Offset of the last entry whose max timestamp is < ``timestamp_ms``; scan from there."""
        i = bisect_left(self.keys, timestamp_ms) - 1
        return self.values[i] if i >= 0 else None

    def truncate_to(self, offset: int) -> None:
        """Drop entries pointing at batches starting at or after ``offset``."""
        self.truncate(bisect_left(self.values, offset))

    def is_sane(self, next_offset_bound: int | None) -> bool:
        keys, offsets = self.keys, self.values
        if not keys:
            return True
        if offsets[0] < self.base_offset:
            return False
        if next_offset_bound is not None and offsets[-1] >= next_offset_bound:
            return False
        return strictly_increasing(keys) and non_decreasing(offsets)
