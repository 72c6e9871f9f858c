"""The sparse offset index: (relative offset uint32, file position uint32) every N bytes.

It bounds how far a read has to scan a segment to find the batch holding an offset: at most
``index_interval_bytes`` plus one batch.
"""

from __future__ import annotations

import struct
from bisect import bisect_left, bisect_right

from spark_log.log.sparse_index import SparseIndex, strictly_increasing


class OffsetIndex(SparseIndex):
    """Keys are absolute base offsets of indexed batches, values their byte positions."""

    ENTRY = struct.Struct(">II")

    def encode(self, key: int, value: int) -> bytes:
        return self.ENTRY.pack(key - self.base_offset, value)

    def decode(self, raw_key: int, raw_value: int) -> tuple[int, int]:
        return self.base_offset + raw_key, raw_value

    def lookup(self, offset: int) -> tuple[int, int]:
        """The last indexed (offset, position) at or before ``offset``; (base, 0) if none."""
        i = bisect_right(self.keys, offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.keys[i], self.values[i]

    def last_position(self) -> int:
        return self.values[-1] if self.values else 0

    def truncate_to(self, offset: int) -> None:
        """Drop entries for batches starting at or after ``offset``."""
        self.truncate(bisect_left(self.keys, offset))

    def is_sane(self, file_size: int, next_offset_bound: int | None) -> bool:
        """Entries strictly increase, lie inside the segment and past its first batch."""
        keys, positions = self.keys, self.values
        if not keys:
            return True
        if keys[0] <= self.base_offset or positions[0] <= 0 or positions[-1] >= file_size:
            return False
        if next_offset_bound is not None and keys[-1] >= next_offset_bound:
            return False
        return strictly_increasing(keys) and strictly_increasing(positions)
