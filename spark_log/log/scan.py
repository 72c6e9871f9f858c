"""Sequential walks over a segment file: header-only (reads, index rebuilds) or verified (recovery).

Both read in chunks with ``pread`` so they work on a file another thread is appending to, as
long as ``end`` is a committed size.
"""

from __future__ import annotations

from collections.abc import Iterator

from spark_log.errors import CorruptRecordError
from spark_log.log.batch import HEADER_SIZE, BatchHeader, parse_header, verify_batch
from spark_log.log.segment_file import SegmentFile

HEADER_SCAN_CHUNK_BYTES = 16 * 1024
"""Read-ahead of a header walk: many small batches per read, little waste on big ones."""
VERIFY_CHUNK_BYTES = 1024 * 1024
"""Read size of a verifying scan, which needs whole batches in memory for the CRC."""


def iter_headers(file: SegmentFile, start: int, end: int) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of each batch in ``[start, end)``; CorruptRecordError if torn."""
    buf = b""
    buf_start = start
    pos = start
    while pos < end:
        rel = pos - buf_start
        if len(buf) - rel < HEADER_SIZE:
            buf = file.pread(min(HEADER_SCAN_CHUNK_BYTES, end - pos), pos)
            buf_start, rel = pos, 0
        header = parse_header(buf, rel)
        if pos + header.size > end:
            raise CorruptRecordError(
                f"{file.path}: torn batch at position {pos} ({header.size} bytes framed, "
                f"{end - pos} present)"
            )
        yield pos, header
        pos += header.size


def iter_verified_batches(
    file: SegmentFile, size: int, expected_offset: int
) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of each good batch from the start of the file.

    A batch is good when it is whole, its CRC matches and its base offset is the previous
    batch's next offset (``expected_offset`` for the first). The first bad batch raises
    CorruptRecordError; everything yielded before it is intact.
    """
    buf = b""
    buf_start = 0
    pos = 0
    while pos < size:
        rel = pos - buf_start
        if len(buf) - rel < HEADER_SIZE:
            buf = file.pread(min(VERIFY_CHUNK_BYTES, size - pos), pos)
            buf_start, rel = pos, 0
        header = parse_header(buf, rel)
        if len(buf) - rel < header.size:
            if pos + header.size > size:
                raise CorruptRecordError(f"{file.path}: torn batch at position {pos}")
            buf = file.pread(max(VERIFY_CHUNK_BYTES, header.size), pos)
            buf_start, rel = pos, 0
        verify_batch(buf, rel)
        if header.base_offset != expected_offset:
            raise CorruptRecordError(
                f"{file.path}: batch at position {pos} starts at offset {header.base_offset}, "
                f"expected {expected_offset}"
            )
        yield pos, header
        expected_offset = header.next_offset
        pos += header.size
