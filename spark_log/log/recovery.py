"""Loading a partition directory's segments at open, recovering them after an unclean shutdown.

After a clean shutdown every segment is adopted from its index files. Otherwise segments wholly
below the recovery point (flushed, so intact) are adopted the same way, and every segment from
the one holding the recovery point on is rescanned: each batch must be whole, pass its CRC and
continue the previous batch's offsets. The log is cut at the first batch that does not — the
file is truncated there and every later segment deleted — because nothing after a hole can be
served without breaking dense offsets. Segments that were rescanned get fresh indexes.

A cut past everything known durable is the normal torn tail of a crash. A cut *below* the
recovery point (fsynced) or the checkpointed HW (committed by the ISR) is not: bytes that had
reached the disk were damaged, and records this replica had acknowledged are gone. Recovery
reports that as a ``RecoveryLoss``, persisted in ``recovery-loss`` until the owner clears it
(a replica must not lead on such a log until it has caught up from a leader again).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path

from spark_log.log.checkpoint import (
    read_offset_range_checkpoint,
    write_offset_range_checkpoint,
)
from spark_log.log.errors import CheckpointError
from spark_log.log.layout import delete_segment_files, list_segment_bases, logger
from spark_log.log.segment import LogSegment


@dataclass(frozen=True, slots=True)
class RecoveryLoss:
    """Offsets ``[first_lost_offset, durable_end_offset)`` were durable before the crash and
    recovery could not keep them (the log now ends at ``first_lost_offset``).

    "Durable" is the best this log knows: below its recovery point (fsynced) or below its
    checkpointed HW (committed). Records past ``durable_end_offset`` may have been lost as
    well; only another replica can tell.
    """

    first_lost_offset: int
    durable_end_offset: int

    def merged(self, other: RecoveryLoss | None) -> RecoveryLoss:
        """Both losses as one range (a second damaged recovery before the first was cleared)."""
        if other is None:
            return self
        return RecoveryLoss(
            min(self.first_lost_offset, other.first_lost_offset),
            max(self.durable_end_offset, other.durable_end_offset),
        )


def find_durable_loss(
    log_end_offset: int, recovery_point: int, checkpointed_hw: int | None
) -> RecoveryLoss | None:
    """The durable offsets a recovered log (ending at ``log_end_offset``) no longer holds."""
    durable_end = max(recovery_point, checkpointed_hw or 0)
    if log_end_offset >= durable_end:
        return None
    return RecoveryLoss(log_end_offset, durable_end)


def load_recovery_loss(path: Path, log_end_offset: int) -> RecoveryLoss | None:
    """The loss an earlier recovery persisted; an unreadable file still counts as a loss (its
    range unknown, reported as empty at the LEO): forgetting it could let the replica lead."""
    try:
        stored = read_offset_range_checkpoint(path)
    except CheckpointError as exc:
        logger.warning("unreadable recovery-loss marker, keeping it: %s", exc)
        return RecoveryLoss(log_end_offset, log_end_offset)
    return None if stored is None else RecoveryLoss(*stored)


def save_recovery_loss(path: Path, loss: RecoveryLoss) -> None:
    write_offset_range_checkpoint(path, loss.first_lost_offset, loss.durable_end_offset)


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
