"""Loading a partition directory's segments at open, recovering them after an unclean shutdown.

After a clean shutdown every segment is adopted from its index files. Otherwise segments wholly
below the recovery point (flushed, so intact) are adopted the same way, and every segment from
the one holding the recovery point on is rescanned: each batch must be whole, pass its CRC and
continue the previous batch's offsets. The log is cut at the first batch that does not — the
file is truncated there and every later segment deleted — because nothing after a hole can be
served without breaking dense offsets. Segments that were rescanned get fresh indexes.
"""

from __future__ import annotations

from bisect import bisect_right
from pathlib import Path

from spark_log.log.layout import delete_segment_files, list_segment_bases, logger
from spark_log.log.segment import LogSegment


def load_segments(
    directory: Path, index_interval_bytes: int, *, clean: bool, recovery_point: int
) -> list[LogSegment]:
    """The directory's segments, oldest first, recovered as needed (may be empty)."""
    bases = list_segment_bases(directory)
    recover_from = len(bases) if clean else max(bisect_right(bases, recovery_point) - 1, 0)
    loaded: list[LogSegment] = []
    complete = False
    try:
        for i in range(len(bases)):
            if not _load_one(directory, bases, i, recover_from, index_interval_bytes, loaded):
                _cut_after(directory, bases[i + 1 :])
                break
        complete = True
    finally:
        if not complete:
            for segment in loaded:
                segment.close()
    return loaded


def _load_one(
    directory: Path,
    bases: list[int],
    i: int,
    recover_from: int,
    index_interval_bytes: int,
    loaded: list[LogSegment],
) -> bool:
    """Load segment ``i`` into ``loaded``; False when the log ends here (later ones must go)."""
    base = bases[i]
    expected = loaded[-1].next_offset if loaded else base
    if base != expected:
        logger.warning(
            "%s: segment %d does not continue the log at offset %d; cutting the log there",
            directory,
            base,
            expected,
        )
        delete_segment_files(directory, base)
        return False
    segment = LogSegment.open(directory, base, index_interval_bytes)
    loaded.append(segment)
    is_last = i == len(bases) - 1
    if i < recover_from:
        adopted = segment.load_active() if is_last else segment.load_sealed(bases[i + 1])
        if adopted:
            return True
        logger.warning("%s: indexes of segment %d are not sane; rescanning it", directory, base)
    reason = segment.recover(expected)
    if is_last or reason is not None:
        segment.persist_indexes(fsync=True)
        segment.file.fsync()
    else:
        segment.seal()
    if reason is not None:
        logger.warning(
            "%s: log cut at offset %d in segment %d: %s",
            directory,
            segment.next_offset,
            base,
            reason,
        )
        return False
    return True


def _cut_after(directory: Path, bases: list[int]) -> None:
    for base in bases:
        logger.warning("%s: deleting segment %d, which lies after the cut", directory, base)
        delete_segment_files(directory, base)
