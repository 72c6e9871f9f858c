"""The leader's most recent batches, kept in memory to answer follower fetches at the tail.

Caught-up followers fetch exactly what the leader appended a moment ago. Serving those bytes
from the writer's own buffers saves a thread hop and a file read per fetch, which is most of
the leader's cost per replication round at light load. Anything older, or any offset that
does not start a cached batch, is read from the log as before. Only the writer adds, and the
cache is cleared on every truncation and role change, so it never holds bytes the log lacks.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from spark_log.log.batch import parse_header

DEFAULT_MAX_BYTES = 8 * 1024 * 1024  # a cap: normally only unreplicated bytes stay


class TailCache:
    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self._max_bytes = max_bytes
        self._batches: deque[tuple[int, int, bytes]] = deque()  # (base, next offset, bytes)
        self._bytes = 0

    def add(self, batches: Sequence[bytes]) -> None:
        """Remember batches just appended to the log, in offset order."""
        for batch in batches:
            header = parse_header(batch)
            if self._batches and self._batches[-1][1] != header.base_offset:
                self.clear()  # not contiguous with what is cached: start over
            self._batches.append((header.base_offset, header.next_offset, batch))
            self._bytes += len(batch)
        while self._bytes > self._max_bytes and len(self._batches) > 1:
            self._bytes -= len(self._batches.popleft()[2])

    def trim_below(self, offset: int) -> None:
        """Forget batches wholly below ``offset`` (the HW: every replica in the ISR has them
        already), so the cache holds only bytes still in flight (memory stays small with many
        partitions, and a partition without followers holds none)."""
        while self._batches and self._batches[0][1] <= offset:
            self._bytes -= len(self._batches.popleft()[2])

    def clear(self) -> None:
        self._batches.clear()
        self._bytes = 0

    def read(self, offset: int, max_bytes: int) -> bytes | None:
        """Whole batches from the one starting at ``offset`` (at least one, then up to
        ``max_bytes``), or None when no cached batch starts there."""
        if not self._batches or not self._batches[0][0] <= offset < self._batches[-1][1]:
            return None
        parts: list[bytes] = []
        size = 0
        started = False
        for base, _next, batch in self._batches:
            if not started:
                if base != offset:
                    if base > offset:
                        return None  # offset falls inside a batch: the log reader knows how
                    continue
                started = True
            elif size + len(batch) > max_bytes:
                break
            parts.append(batch)
            size += len(batch)
        return b"".join(parts) if parts else None
