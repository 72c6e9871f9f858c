"""The leader-epoch cache: which leader epoch wrote which range of offsets (KIP-101/279).

Followers use it to truncate a divergent tail by asking the leader where their latest epoch
ended, instead of trusting the high watermark (which loses or duplicates data across two quick
leader changes). Each entry ``(epoch, start_offset)`` says epoch ``epoch`` wrote its first batch
at ``start_offset``; both columns strictly increase.
"""

from __future__ import annotations

import threading
from pathlib import Path

from spark_log.errors import InvalidRequestError
from spark_log.log.checkpoint import read_epoch_checkpoint, write_epoch_checkpoint
from spark_log.log.errors import LeaderEpochRegressionError

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

EpochEntry = tuple[int, int]


class LeaderEpochCache:
    """(epoch, start_offset) entries, mirrored to ``leader-epoch-checkpoint`` on every change.

    Mutations take a lock and persist before returning (epoch changes are rare, so the fsyncs
    are cheap); readers see an immutable tuple and never block.
    """

    def __init__(self, path: Path, entries: list[EpochEntry]) -> None:
        self._path = path
        self._entries: tuple[EpochEntry, ...] = tuple(entries)
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: Path) -> LeaderEpochCache | None:
        """The cache stored at ``path``; None if the file is missing (CheckpointError if bad)."""
        entries = read_epoch_checkpoint(path)
        return None if entries is None else cls(path, entries)

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int | None:
        entries = self._entries
        return entries[-1][0] if entries else None

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (no-op if it is already the latest).

        As in Kafka, entries starting at or after ``start_offset`` are dropped first: they
        describe offsets that no longer exist.
        """
        if epoch < 0 or start_offset < 0:
            raise InvalidRequestError(f"invalid epoch entry ({epoch}, {start_offset})")
        with self._lock:
            latest = self._entries[-1][0] if self._entries else None
            if latest is not None and epoch < latest:
                raise LeaderEpochRegressionError(
                    f"leader epoch {epoch} is older than the latest epoch {latest}"
                )
            if epoch == latest:
                return
            kept = [e for e in self._entries if e[1] < start_offset]
            self._replace([*kept, (epoch, start_offset)])

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop entries starting at or after ``end_offset`` (the log was cut there)."""
        with self._lock:
            kept = [e for e in self._entries if e[1] < end_offset]
            if len(kept) != len(self._entries):
                self._replace(kept)

    def truncate_from_start(self, start_offset: int) -> None:
        """Forget entries wholly below the new log start; the epoch covering it now starts there."""
        with self._lock:
            below = [e for e in self._entries if e[1] <= start_offset]
            if not below or below == [(below[-1][0], start_offset)]:
                return
            rest = [e for e in self._entries if e[1] > start_offset]
            self._replace([(below[-1][0], start_offset), *rest])

    def clear(self) -> None:
        with self._lock:
            if self._entries:
                self._replace([])

    def persist(self) -> None:
        with self._lock:
            write_epoch_checkpoint(self._path, list(self._entries))

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch as Kafka answers it.

        * latest epoch -> (epoch, LEO)
        * otherwise (largest epoch <= ``epoch``, start offset of the next higher epoch)
        * ``epoch`` older than every entry -> (``epoch``, start of the first entry), so a
          follower still truncates to a point the leader is sure of
        * unknown/undefined (no entries, ``epoch`` < 0 or above the latest) -> (-1, -1)
        """
        entries = self._entries
        if epoch < 0 or not entries or epoch > entries[-1][0]:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if epoch == entries[-1][0]:
            return epoch, log_end_offset
        higher = next(i for i, (e, _) in enumerate(entries) if e > epoch)
        if higher == 0:
            return epoch, entries[0][1]
        return entries[higher - 1][0], entries[higher][1]

    def _replace(self, entries: list[EpochEntry]) -> None:
        write_epoch_checkpoint(self._path, entries)
        self._entries = tuple(entries)
