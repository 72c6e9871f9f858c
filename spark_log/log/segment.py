"""A log segment: one ``.log`` file of batches plus its offset and time indexes.

The in-memory state (size, next offset, max timestamp, index entries) is always a function of
the committed bytes of the file: ``track`` advances it batch by batch, and every way of
(re)building it — append, recovery, truncation — goes through ``track``. Callers serialise
mutations with the partition log's lock.
"""

from __future__ import annotations

from pathlib import Path

from spark_log.errors import CorruptRecordError, StorageError
from spark_log.log.batch import HEADER_SIZE, NO_TIMESTAMP, BatchHeader, parse_header
from spark_log.log.layout import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, segment_path
from spark_log.log.offset_index import OffsetIndex
from spark_log.log.scan import iter_headers, iter_verified_batches
from spark_log.log.segment_file import SegmentFile
from spark_log.log.time_index import TimeIndex


class LogSegment:
    """Offsets ``[base_offset, next_offset)`` stored in ``size`` committed bytes."""

    def __init__(
        self, directory: Path, base_offset: int, file: SegmentFile, index_interval_bytes: int
    ) -> None:
        self.base_offset = base_offset
        self.file = file
        self.offset_index = OffsetIndex(
            segment_path(directory, base_offset, INDEX_SUFFIX), base_offset
        )
        self.time_index = TimeIndex(
            segment_path(directory, base_offset, TIME_INDEX_SUFFIX), base_offset
        )
        self._index_interval_bytes = index_interval_bytes
        self._reset()

    def _reset(self) -> None:
        self.size = 0
        self.next_offset = self.base_offset
        self.max_timestamp_ms = NO_TIMESTAMP
        self.rolling_timestamp_ms: int | None = None
        self._last_batch_offset = self.base_offset
        self._bytes_since_index_entry = 0
        self.offset_index.clear()
        self.time_index.clear()

    @classmethod
    def create(cls, directory: Path, base_offset: int, index_interval_bytes: int) -> LogSegment:
        file = SegmentFile.open(segment_path(directory, base_offset, LOG_SUFFIX), create=True)
        return cls(directory, base_offset, file, index_interval_bytes)

    @classmethod
    def open(cls, directory: Path, base_offset: int, index_interval_bytes: int) -> LogSegment:
        """Open an existing segment; its state is empty until one of the ``load_*``/``recover``."""
        file = SegmentFile.open(segment_path(directory, base_offset, LOG_SUFFIX), create=False)
        return cls(directory, base_offset, file, index_interval_bytes)

    @property
    def record_count(self) -> int:
        return self.next_offset - self.base_offset

    # ------------------------------------------------------------------ appending

    def track(self, header: BatchHeader, position: int) -> None:
        """Account for a batch now in the file at ``position`` (the previous size).

        An index entry is added for the batch when at least ``index_interval_bytes`` were
        appended since the last one; the time index gets one alongside if the running max
        timestamp grew.
        """
        if self._bytes_since_index_entry >= self._index_interval_bytes:
            self.offset_index.append(header.base_offset, position)
            self.time_index.maybe_append(
                max(self.max_timestamp_ms, header.max_timestamp_ms), header.base_offset
            )
            self._bytes_since_index_entry = 0
        if self.rolling_timestamp_ms is None:
            self.rolling_timestamp_ms = header.max_timestamp_ms
        self.max_timestamp_ms = max(self.max_timestamp_ms, header.max_timestamp_ms)
        self._bytes_since_index_entry += header.size
        self._last_batch_offset = header.base_offset
        self.next_offset = header.next_offset
        self.size = position + header.size

    def add_final_time_entry(self) -> None:
        """Record the segment's max timestamp in the time index (done when it is sealed/closed),
        so a restart learns it without a scan."""
        if self.size:
            self.time_index.maybe_append(self.max_timestamp_ms, self._last_batch_offset)

    def persist_indexes(self, *, fsync: bool) -> None:
        self.offset_index.persist(fsync)
        self.time_index.persist(fsync)

    def seal(self) -> None:
        """Make the segment durable and complete on disk before it becomes immutable."""
        self.add_final_time_entry()
        self.persist_indexes(fsync=True)
        self.file.fsync()

    # ------------------------------------------------------------------ lookups

    def start_position(self, offset: int) -> int:
        """A batch boundary at or before the batch holding ``offset``."""
        return self.offset_index.lookup(offset)[1]

    def time_scan_position(self, timestamp_ms: int) -> int:
        """A batch boundary before which no record has a timestamp >= ``timestamp_ms``."""
        offset = self.time_index.offset_before(timestamp_ms)
        return 0 if offset is None else self.start_position(offset)

    # ------------------------------------------------------------------ loading

    def load_sealed(self, next_offset: int) -> bool:
        """Adopt a trusted sealed segment from its index files; False if they are not sane.

        ``next_offset`` is the next segment's base offset. Nothing but the last index entry is
        read from the log file, which is what makes a clean restart of a big log fast.
        """
        size = self.file.size()
        if size == 0 or next_offset <= self.base_offset:
            return False
        if not (self.offset_index.load() and self.time_index.load()):
            return False
        sane = (
            len(self.time_index) > 0
            and self.offset_index.is_sane(size, next_offset)
            and self.time_index.is_sane(next_offset)
            and self._last_index_entry_is_a_batch(size)
        )
        if not sane:
            return False
        self.size = size
        self.next_offset = next_offset
        self.max_timestamp_ms = self.time_index.last_timestamp
        self._last_batch_offset = self.time_index.values[-1]
        return True

    def load_active(self) -> bool:
        """Adopt the last segment after a clean shutdown: indexes from files, the tail after the
        last index entry by a header walk. False if anything does not add up."""
        size = self.file.size()
        if not (self.offset_index.load() and self.time_index.load()):
            return False
        if not self.offset_index.is_sane(size, None) or not self._last_index_entry_is_a_batch(size):
            return False
        expected, start = self.base_offset, 0
        if len(self.offset_index):
            expected, start = self.offset_index.keys[-1], self.offset_index.values[-1]
        state = _walk_tail(self.file, start, size, expected, self.time_index.last_timestamp)
        if state is None or not self.time_index.is_sane(state.next_offset):
            return False
        self.size = size
        self.next_offset = state.next_offset
        self.max_timestamp_ms = state.max_timestamp_ms
        self._last_batch_offset = state.last_batch_offset
        self._bytes_since_index_entry = size - self.offset_index.last_position()
        if size:
            self.rolling_timestamp_ms = parse_header(
                self.file.pread(HEADER_SIZE, 0)
            ).max_timestamp_ms
        return True

    def _last_index_entry_is_a_batch(self, size: int) -> bool:
        if not len(self.offset_index):
            return True
        offset, position = self.offset_index.keys[-1], self.offset_index.values[-1]
        try:
            header = parse_header(self.file.pread(HEADER_SIZE, position))
        except CorruptRecordError:
            return False
        return header.base_offset == offset and position + header.size <= size

    # ------------------------------------------------------------------ recovery, truncation

    def recover(self, expected_offset: int) -> str | None:
        """Rebuild state from the longest verified prefix of the file and cut the rest.

        Returns why the file was cut (None if it was intact).
        """
        self._reset()
        file_size = self.file.size()
        reason = None
        try:
            for position, header in iter_verified_batches(self.file, file_size, expected_offset):
                self.track(header, position)
        except CorruptRecordError as exc:
            reason = f"{exc} ({file_size - self.size} bytes cut)"
        if self.size < file_size:
            self.file.truncate(self.size)
        return reason

    def batch_containing(self, offset: int) -> tuple[int, int]:
        """(position, base offset) of the batch holding ``offset``; (size, next) past the end."""
        for position, header in iter_headers(self.file, self.start_position(offset), self.size):
            if header.next_offset > offset:
                return position, header.base_offset
        return self.size, self.next_offset

    def truncate_to(self, offset: int) -> None:
        """Cut the file at the batch boundary ``offset`` and rebuild the state from what is left.

        Batches are immutable, so callers truncate at batch boundaries (``batch_containing``).
        """
        position, base = self.batch_containing(offset)
        if base != offset:
            raise StorageError(f"{self.file.path}: offset {offset} is not a batch boundary")
        self.file.truncate(position)
        self.file.fsync()
        self._reset()
        for pos, header in iter_headers(self.file, 0, position):
            if header.base_offset != self.next_offset:
                raise CorruptRecordError(
                    f"{self.file.path}: offset gap at position {pos} while truncating"
                )
            self.track(header, pos)

    # ------------------------------------------------------------------ lifecycle

    def delete(self) -> None:
        """Unlink the files and drop the owner's fd reference (readers holding one keep it)."""
        try:
            self.file.path.unlink(missing_ok=True)
            self.offset_index.delete_file()
            self.time_index.delete_file()
        except OSError as exc:
            raise StorageError(f"cannot delete segment {self.file.path}: {exc}") from exc
        finally:
            self.file.release()

    def close(self) -> None:
        self.file.release()


class _TailState:
    __slots__ = ("last_batch_offset", "max_timestamp_ms", "next_offset")

    def __init__(self, next_offset: int, max_timestamp_ms: int, last_batch_offset: int) -> None:
        self.next_offset = next_offset
        self.max_timestamp_ms = max_timestamp_ms
        self.last_batch_offset = last_batch_offset


def _walk_tail(
    file: SegmentFile, start: int, size: int, expected: int, max_timestamp_ms: int
) -> _TailState | None:
    """Walk headers from ``start``; None on a torn batch or an offset gap."""
    state = _TailState(expected, max_timestamp_ms, expected)
    try:
        for _, header in iter_headers(file, start, size):
            if header.base_offset != state.next_offset:
                return None
            state.last_batch_offset = header.base_offset
            state.next_offset = header.next_offset
            state.max_timestamp_ms = max(state.max_timestamp_ms, header.max_timestamp_ms)
    except CorruptRecordError:
        return None
    return state
