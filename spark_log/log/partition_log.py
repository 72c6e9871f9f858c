"""The partition log: an append-only sequence of segments with Kafka's offsets and checkpoints.

Threading model: ONE writer thread appends, rolls, truncates and closes; any number of reader
threads call ``read``/``offset_for_timestamp`` and the properties; ``flush``,
``checkpoint_high_watermark``, ``set_high_watermark`` and ``delete_old_segments`` may run on
other threads too. ``_lock`` guards the segment list and every segment's in-memory state and is
held only for bookkeeping (and during the rare truncations); readers copy what they need under
it — the fd, the position to start at and the *committed* size — and then ``pread`` without it.
Since a batch's bytes are written before the committed size moves past them, a reader never
sees a partial batch. Truncation is the one operation that changes bytes a reader may already
have been told are committed; it bumps ``_generation`` and readers that overlap it retry.
"""

from __future__ import annotations

import shutil
import threading
import time
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow.compute as pc

from spark_log.config import LogConfig
from spark_log.errors import (
    CorruptRecordError,
    InvalidRequestError,
    OffsetOutOfRangeError,
    StorageError,
)
from spark_log.log.batch import (
    BatchHeader,
    decode_header,
    decode_records,
    parse_header,
    verify_batch,
)
from spark_log.log.checkpoint import (
    fsync_directory,
    probe_free_space,
    read_offset_checkpoint,
    write_atomically,
    write_offset_checkpoint,
)
from spark_log.log.epoch_cache import LeaderEpochCache
from spark_log.log.errors import (
    CheckpointError,
    FsyncError,
    LeaderEpochRegressionError,
    LogClosedError,
    NonContiguousBatchError,
)
from spark_log.log.layout import (
    CLEAN_SHUTDOWN_FILE,
    HIGH_WATERMARK_FILE,
    LEADER_EPOCH_FILE,
    RECOVERY_LOSS_FILE,
    RECOVERY_POINT_FILE,
    SPACE_PROBE_FILE,
    logger,
    remove_stray_files,
)
from spark_log.log.recovery import (
    RecoveryLoss,
    find_durable_loss,
    load_recovery_loss,
    load_segments,
    save_recovery_loss,
)
from spark_log.log.retention import RetentionLimits, SegmentStats, count_deletable
from spark_log.log.roll import should_roll
from spark_log.log.scan import iter_headers
from spark_log.log.segment import LogSegment
from spark_log.log.segment_file import Buffer, SegmentFile

INITIAL_LOG_START_OFFSET = 0
"""Where a brand-new log starts."""
RECOVER_EVERYTHING = 0
"""The recovery point assumed when its checkpoint is missing: rescan every segment."""


def wall_clock_ms() -> int:
    """Milliseconds since the epoch, UTC (the default clock; tests inject their own)."""
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class _ReadView:
    """What a reader needs from one segment, captured under the lock."""

    file: SegmentFile
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class _ReadSnapshot:
    views: list[_ReadView]
    upper_offset: int
    generation: int


class PartitionLog:
    """One partition's log in one directory. Create it with :meth:`open`."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        now_ms: Callable[[], int],
        segments: Sequence[LogSegment],
        epochs: LeaderEpochCache,
        high_watermark: int,
    ) -> None:
        self._dir = directory
        self._config = config
        self._now_ms = now_ms
        self._lock = threading.Lock()
        self._structure_lock = threading.RLock()
        self._checkpoint_lock = threading.Lock()
        self._segments: tuple[LogSegment, ...] = tuple(segments)
        self._epochs = epochs
        self._high_watermark = high_watermark
        self._flushed_offset = self.log_end_offset
        self._recovery_point = self.log_end_offset
        self._checkpointed_high_watermark: int | None = None
        self._generation = 0
        self._closed = False
        self._failure: str | None = None
        self._fsync_failure: str | None = None  # set once, never cleared: see FsyncError
        self._recovery_loss: RecoveryLoss | None = None
        self._leading_epoch: int | None = None  # see assign_leader_epoch

    # ================================================================== open

    @classmethod
    def open(
        cls, directory: Path, config: LogConfig, *, now_ms: Callable[[], int] = wall_clock_ms
    ) -> PartitionLog:
        """Open (creating if missing) the log in ``directory``, recovering it if it was not
        closed cleanly."""
        directory = Path(directory)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create log directory {directory}: {exc}") from exc
        marker = directory / CLEAN_SHUTDOWN_FILE
        brand_new = not any(directory.iterdir())
        clean = brand_new or marker.exists()
        remove_stray_files(directory)
        recovery_point = _read_checkpoint(directory / RECOVERY_POINT_FILE)
        if recovery_point is None:
            recovery_point = RECOVER_EVERYTHING
        if not clean:
            logger.info(
                "%s: unclean shutdown, recovering from offset %d", directory, recovery_point
            )
        segments = _load_or_create_segments(directory, config, clean, recovery_point)
        opened = False
        try:
            log = cls._assemble(directory, config, now_ms, segments)
            log._finish_open(recovery_point, marker)
            opened = True
        finally:
            if not opened:
                for segment in segments:
                    segment.close()
        return log

    def _finish_open(self, recovery_point: int, marker: Path) -> None:
        """Everything below the LEO is on disk now (recovered segments were fsynced), so the
        recovery point moves there; then the clean-shutdown marker goes, durably, so that a
        crash from here on is recognised as one. A durable loss is persisted first: the
        checkpoints rewritten next are the only evidence of it."""
        self._note_recovery_loss(recovery_point)
        if recovery_point != self.log_end_offset:
            self._write_recovery_point(self.log_end_offset)
        self._lower_high_watermark_checkpoint()
        marker.unlink(missing_ok=True)
        fsync_directory(self._dir)

    @classmethod
    def _assemble(
        cls,
        directory: Path,
        config: LogConfig,
        now_ms: Callable[[], int],
        segments: list[LogSegment],
    ) -> PartitionLog:
        """The log object over loaded segments, with its epoch cache and HW reconciled."""
        log_start, leo = segments[0].base_offset, segments[-1].next_offset
        epochs = _load_epochs(directory / LEADER_EPOCH_FILE, segments)
        epochs.truncate_from_end(leo)
        epochs.truncate_from_start(log_start)
        checkpointed_hw = _read_checkpoint(directory / HIGH_WATERMARK_FILE)
        hw = log_start if checkpointed_hw is None else min(max(checkpointed_hw, log_start), leo)
        log = cls(directory, config, now_ms, segments, epochs, hw)
        log._checkpointed_high_watermark = checkpointed_hw
        return log

    # ================================================================== properties

    @property
    def directory(self) -> Path:
        return self._dir

    @property
    def config(self) -> LogConfig:
        """The config as given; ``config.fsync`` is the caller's to act on (see ``flush``)."""
        return self._config

    @property
    def log_start_offset(self) -> int:
        return self._segments[0].base_offset

    @property
    def log_end_offset(self) -> int:
        """LEO: the offset the next appended record will get."""
        return self._segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        """HW: the first offset not yet committed (replicated to the whole ISR)."""
        return self._high_watermark

    @property
    def flushed_offset(self) -> int:
        """Every offset below this has been fsynced."""
        return self._flushed_offset

    @property
    def recovery_point(self) -> int:
        """The last recovery point checkpointed: recovery rescans from its segment on."""
        return self._recovery_point

    @property
    def recovery_loss(self) -> RecoveryLoss | None:
        """Durable offsets a recovery lost (persisted until ``clear_recovery_loss``), or None.

        A torn tail past the recovery point and the checkpointed HW is a normal crash and is
        not a loss; a cut below either means the files were damaged.
        """
        return self._recovery_loss

    def clear_recovery_loss(self) -> None:
        """Forget a recovery loss: the owner has restored what was lost (caught up from a
        leader) or decided to live without it. Durable, so a restart does not bring it back."""
        self._check_open()
        if self._recovery_loss is None:
            return
        (self._dir / RECOVERY_LOSS_FILE).unlink(missing_ok=True)
        fsync_directory(self._dir)
        logger.info("%s: recovery loss %s cleared", self._dir, self._recovery_loss)
        self._recovery_loss = None

    def _note_recovery_loss(self, recovery_point: int) -> None:
        path = self._dir / RECOVERY_LOSS_FILE
        leo = self.log_end_offset
        earlier = load_recovery_loss(path, leo)
        found = find_durable_loss(leo, recovery_point, self._checkpointed_high_watermark)
        if found is not None:
            logger.warning(
                "%s: recovery LOST DURABLE DATA: offsets %d..%d were below the recovery point "
                "(%d) or the checkpointed HW (%s) and are gone; the log now ends at %d",
                self._dir,
                found.first_lost_offset,
                found.durable_end_offset,
                recovery_point,
                self._checkpointed_high_watermark,
                leo,
            )
            found = found.merged(earlier)
            save_recovery_loss(path, found)
        self._recovery_loss = found or earlier

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs.latest_epoch

    @property
    def epoch_entries(self) -> list[tuple[int, int]]:
        """(epoch, start_offset) pairs, oldest first."""
        return self._epochs.entries

    @property
    def size_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    @property
    def segment_count(self) -> int:
        return len(self._segments)

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self._dir}, start={self.log_start_offset}, "
            f"hw={self._high_watermark}, leo={self.log_end_offset})"
        )

    def __enter__(self) -> PartitionLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ================================================================== high watermark

    def set_high_watermark(self, hw: int) -> None:
        """Advance the HW (clamped to [log start, LEO]); a lower value is ignored, since only
        truncation may move the HW back."""
        with self._lock:
            clamped = min(max(hw, self._segments[0].base_offset), self._segments[-1].next_offset)
            if clamped > self._high_watermark:
                self._high_watermark = clamped

    def checkpoint_high_watermark(self) -> None:
        """Persist the HW atomically (skipped when unchanged since the last checkpoint)."""
        self._check_open()
        with self._checkpoint_lock:
            hw = self._high_watermark
            if hw != self._checkpointed_high_watermark:
                write_offset_checkpoint(self._dir / HIGH_WATERMARK_FILE, hw)
                self._checkpointed_high_watermark = hw

    def _lower_high_watermark_checkpoint(self) -> None:
        """After truncation or recovery, never leave a checkpointed HW above the real one: a
        later restart would otherwise take offsets re-written since as committed."""
        with self._checkpoint_lock:
            checkpointed = self._checkpointed_high_watermark
            if checkpointed is None or checkpointed > self._high_watermark:
                write_offset_checkpoint(self._dir / HIGH_WATERMARK_FILE, self._high_watermark)
                self._checkpointed_high_watermark = self._high_watermark

    # ================================================================== append

    def append(self, batch: Buffer, *, verify_crc: bool = True) -> BatchHeader:
        """Append one encoded batch whose base offset must be the LEO.

        ``verify_crc=False`` skips only the CRC check (framing, offsets and epochs are always
        checked); pass it for bytes this process just produced with ``encode_batch``.
        """
        return self.append_many([batch], verify_crc=verify_crc)[0]

    def append_many(
        self, batches: Sequence[Buffer], *, verify_crc: bool = True
    ) -> list[BatchHeader]:
        """Append consecutive batches with one ``writev`` per segment touched.

        Every batch is validated before anything is written, so a bad batch appends nothing.
        Should the disk fail mid-way (StorageError), batches in segments already written stay
        and ``log_end_offset`` says how far it got. Nothing is fsynced: the caller decides
        when to flush.
        """
        self._check_writable()
        headers = self._validate(batches, verify_crc)
        self._assign_epochs(headers)
        group_start = 0
        pending_bytes = 0
        with self._refusing_writes_after_fsync_failure():
            for i, header in enumerate(headers):
                if self._must_roll(pending_bytes, headers[group_start], header):
                    self._write(batches[group_start:i], headers[group_start:i])
                    self._roll(header.base_offset)
                    group_start, pending_bytes = i, 0
                pending_bytes += header.size
            self._write(batches[group_start:], headers[group_start:])
        return headers

    def _validate(self, batches: Sequence[Buffer], verify_crc: bool) -> list[BatchHeader]:
        check = verify_batch if verify_crc else decode_header
        expected = self.log_end_offset
        latest = self._epochs.latest_epoch
        headers = []
        for batch in batches:
            header = check(batch)
            if header.size != len(batch):
                raise InvalidRequestError(
                    f"an appended buffer must hold exactly one batch ({len(batch)} bytes given, "
                    f"{header.size} framed)"
                )
            if header.base_offset != expected:
                raise NonContiguousBatchError(
                    f"batch starts at offset {header.base_offset} but the log end offset "
                    f"is {expected}"
                )
            if header.leader_epoch < 0:
                raise InvalidRequestError(
                    f"batch at offset {header.base_offset} has no leader epoch "
                    f"({header.leader_epoch})"
                )
            if latest is not None and header.leader_epoch < latest:
                raise LeaderEpochRegressionError(
                    f"batch at offset {header.base_offset} has leader epoch "
                    f"{header.leader_epoch}, below the latest epoch {latest}"
                )
            latest = header.leader_epoch
            expected = header.next_offset
            headers.append(header)
        return headers

    def _assign_epochs(self, headers: list[BatchHeader]) -> None:
        """Record epoch changes before the bytes are written: a crash in between leaves an
        entry at/after the LEO, which recovery drops, never a batch without its epoch."""
        if any(header.leader_epoch != self._leading_epoch for header in headers):
            self._leading_epoch = None  # another leader's records: this log no longer leads
        latest = self._epochs.latest_epoch
        for header in headers:
            if latest is None or header.leader_epoch > latest:
                self._epochs.assign(header.leader_epoch, header.base_offset)
                latest = header.leader_epoch

    def _must_roll(
        self, pending_bytes: int, first_pending: BatchHeader, header: BatchHeader
    ) -> bool:
        active = self._segments[-1]
        if active.size:
            rolling_ts = active.rolling_timestamp_ms
        else:
            rolling_ts = first_pending.max_timestamp_ms if pending_bytes else None
        return should_roll(
            segment_base=active.base_offset,
            segment_size=active.size + pending_bytes,
            rolling_timestamp_ms=rolling_ts,
            header=header,
            segment_bytes=self._config.segment_bytes,
            segment_ms=self._config.segment_ms,
        )

    def _write(self, batches: Sequence[Buffer], headers: Sequence[BatchHeader]) -> None:
        if not batches:
            return
        segment = self._segments[-1]
        start = segment.size
        try:
            segment.file.append(batches)
        except StorageError:
            self._undo_partial_write(segment, start)
            raise
        with self._lock:
            position = start
            for header in headers:
                segment.track(header, position)
                position += header.size

    def _undo_partial_write(self, segment: LogSegment, committed_size: int) -> None:
        """Cut whatever part of a failed write reached the file, or refuse further writes."""
        try:
            segment.file.truncate(committed_size)
            self._drop_unwritten_epochs()
        except StorageError as exc:
            self._failure = f"a failed append could not be undone: {exc}"
            logger.error("%s: %s", self._dir, self._failure)

    def resume_writes(self, probe_bytes: int) -> None:
        """Accept appends again after one failed for lack of space (writer thread only).

        Cuts whatever part of the failed batch reached the active segment (the committed size
        is what readers and the LEO know), fsyncs that, rewrites the leader-epoch checkpoint
        (an entry for the failed batch may have been written), then proves the disk takes
        ``probe_bytes`` more by writing, fsyncing and removing a probe file. StorageError
        while any of it fails: the log stays as it was and refuses writes if it did before.
        ``FsyncError``, doing nothing, once any fsync of log data has failed: this fsync
        succeeding would not bring back pages the kernel dropped then.
        """
        self._check_open()
        self._refuse_resuming_after_fsync_failure()
        with self._structure_lock, self._refusing_writes_after_fsync_failure():
            active = self._segments[-1]
            active.file.truncate(active.size)
            active.file.fsync()
            self._drop_unwritten_epochs()
            self._epochs.persist()
            probe_free_space(self._dir / SPACE_PROBE_FILE, probe_bytes)
            self._refuse_resuming_after_fsync_failure()  # a flush on another thread, meanwhile
            if self._failure is not None:
                logger.info("%s: writes accepted again after: %s", self._dir, self._failure)
            self._failure = None

    def _refuse_resuming_after_fsync_failure(self) -> None:
        """``FsyncError`` once any fsync of log data has failed (see ``FsyncError``)."""
        if self._fsync_failure is not None:
            raise FsyncError(
                f"log {self._dir} cannot take writes again: an fsync failed "
                f"({self._fsync_failure}); only reopening it (recovery) can"
            )

    @contextmanager
    def _refusing_writes_after_fsync_failure(self) -> Iterator[None]:
        """Record a failed fsync of log data (``FsyncError``, re-raised) and refuse writes
        for good: the kernel may have marked the pages it could not write clean, so they read
        back as if on disk and a later fsync succeeds without them."""
        try:
            yield
        except FsyncError as exc:
            if self._fsync_failure is None:  # the first one says what was lost
                self._fsync_failure = str(exc)
                self._failure = f"an fsync failed: {exc}"
                logger.error("%s: %s", self._dir, self._failure)
            raise

    def roll(self) -> bool:
        """Seal the active segment now if it holds any batch (``liftlog stream flush``: what
        the lake then holds can be deleted by retention, which only deletes sealed segments).
        Writer thread only, like appends. Returns whether a segment was sealed."""
        self._check_writable()
        with self._lock:
            active = self._segments[-1]
            if not active.size:
                return False
            new_base_offset = active.next_offset
        with self._refusing_writes_after_fsync_failure():
            self._roll(new_base_offset)
        return True

    def _roll(self, new_base_offset: int) -> None:
        """Seal the active segment (durably: fsync data and indexes) and start a new one."""
        with self._structure_lock:
            old = self._segments[-1]
            with self._lock:
                old.add_final_time_entry()
            old.persist_indexes(fsync=True)
            old.file.fsync()
            new = LogSegment.create(self._dir, new_base_offset, self._config.index_interval_bytes)
            with self._lock:
                self._segments = (*self._segments, new)
                self._flushed_offset = max(self._flushed_offset, new_base_offset)
            # Renaming the checkpoint into place fsyncs the directory, which also makes the
            # new segment's directory entry durable before anything in it can be flushed.
            self._write_recovery_point(new_base_offset)
            logger.debug("%s: rolled segment %d -> %d", self._dir, old.base_offset, new_base_offset)

    # ================================================================== flush

    def flush(self) -> None:
        """fsync the active segment. The caller owns the fsync policy: with ``always`` it
        flushes after each append group and before acking; ``interval`` on a timer;
        ``never`` leaves it to the OS. Sealed segments were fsynced when they were rolled."""
        with self._lock:
            self._check_open()
            segment = self._segments[-1]
            target = segment.next_offset
            generation = self._generation
            if target <= self._flushed_offset or not segment.file.retain():
                return
        try:
            with self._refusing_writes_after_fsync_failure():
                segment.file.fsync()
        finally:
            segment.file.release()
        with self._lock:
            if self._generation == generation:  # a truncation in between voids the fsync
                self._flushed_offset = max(self._flushed_offset, target)

    def _write_recovery_point(self, offset: int) -> None:
        write_offset_checkpoint(self._dir / RECOVERY_POINT_FILE, offset)
        self._recovery_point = offset

    # ================================================================== read

    def read(self, start_offset: int, max_bytes: int, upper_offset: int | None = None) -> bytes:
        """Whole batches from the one holding ``start_offset``, up to ``max_bytes`` (but at
        least one batch), excluding batches starting at or after ``upper_offset`` (default
        LEO; pass the HW to serve consumers). b"" when ``start_offset`` is at the upper bound.
        """
        if max_bytes < 0:
            raise InvalidRequestError(f"max_bytes must be >= 0, got {max_bytes}")
        while True:
            snapshot = self._read_snapshot(start_offset, upper_offset, max_bytes)
            try:
                data: bytes | None = _read_views(
                    snapshot.views, start_offset, snapshot.upper_offset, max_bytes
                )
                _check_read_covers(data, start_offset, snapshot.upper_offset)
            except CorruptRecordError:
                if self._generation == snapshot.generation:
                    raise
                data = None
            finally:
                _release(snapshot.views)
            if data is not None and self._generation == snapshot.generation:
                return data

    def _read_snapshot(
        self, start_offset: int, upper_offset: int | None, max_bytes: int
    ) -> _ReadSnapshot:
        with self._lock:
            self._check_open()
            segments = self._segments
            log_start, leo = segments[0].base_offset, segments[-1].next_offset
            if not log_start <= start_offset <= leo:
                raise OffsetOutOfRangeError(
                    f"offset {start_offset} is outside the log [{log_start}, {leo}]"
                )
            upper = leo if upper_offset is None else min(upper_offset, leo)
            views: list[_ReadView] = []
            if start_offset < upper:
                first = bisect_right(segments, start_offset, key=_base_offset) - 1
                budget = max_bytes
                for segment in segments[first:]:
                    if segment.base_offset >= upper or (views and budget <= 0):
                        break
                    start = segment.start_position(start_offset) if not views else 0
                    views.append(_ReadView(_retained(segment.file), start, segment.size))
                    budget -= segment.size - start
            return _ReadSnapshot(views, upper, self._generation)

    # ================================================================== timestamps

    def offset_for_timestamp(self, timestamp_ms: int) -> int | None:
        """The first offset whose record timestamp is >= ``timestamp_ms``; None if none is."""
        while True:
            with self._lock:
                self._check_open()
                generation = self._generation
                segment = next(
                    (s for s in self._segments if s.max_timestamp_ms >= timestamp_ms), None
                )
                if segment is None:
                    return None
                view = _ReadView(
                    _retained(segment.file), segment.time_scan_position(timestamp_ms), segment.size
                )
            try:
                found = _first_offset_at_or_after(view, timestamp_ms)
            except CorruptRecordError:
                if self._generation == generation:
                    raise
                found = None
            finally:
                _release([view])
            if self._generation == generation:
                return found

    # ================================================================== leader epochs

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch (KIP-101/279); see ``LeaderEpochCache.end_offset_for``."""
        return self._epochs.end_offset_for(epoch, self.log_end_offset)

    def assign_leader_epoch(self, epoch: int) -> None:
        """Record that ``epoch`` starts at the LEO: this replica has just become its leader.

        Kafka's makeLeader does the same (KAFKA-7415). Without the entry a follower holding
        records of an epoch this log never saw (an unclean or a quick double election) asks
        about it before the first append and gets no answer (-1, -1), so it keeps a divergent
        tail. The entry covers no records until the first append in ``epoch``; the epoch's
        end offset is the LEO, as for any latest epoch. Persisted before returning; a reopen
        drops it (it starts at the LEO) and the leader records it again on re-entering its
        role. While every append carries ``epoch`` a failed append keeps the entry (see
        ``_drop_unwritten_epochs``). LeaderEpochRegressionError if the log holds a later
        epoch, StorageError if the checkpoint cannot be written.
        """
        self._check_open()
        with self._structure_lock:
            self._leading_epoch = epoch
            self._epochs.assign(epoch, self.log_end_offset)

    def _drop_unwritten_epochs(self) -> None:
        """After a failed append: forget the epoch entries of batches that never reached the
        log, but keep (or restore) the entry of the epoch this log leads, which followers
        need while the disk is full (see ``assign_leader_epoch``)."""
        leo = self.log_end_offset
        leading = self._leading_epoch
        entries = self._epochs.entries
        keep_last = leading is not None and bool(entries) and entries[-1] == (leading, leo)
        self._epochs.truncate_from_end(leo + 1 if keep_last else leo)
        latest = self._epochs.latest_epoch
        if leading is not None and (latest is None or latest < leading):
            self._epochs.assign(leading, leo)

    # ================================================================== truncation

    def truncate_to(self, offset: int) -> None:
        """Remove every offset >= ``offset`` (a follower dropping a divergent tail).

        Batches are never split, so if ``offset`` falls inside a batch the whole batch goes and
        the new LEO is that batch's base offset. Below the log start this empties the log and
        restarts it at ``offset``, as Kafka does. At or past the LEO it removes no records but
        still drops epoch entries starting at the LEO, as Kafka does: a deposed leader's entry
        for the epoch it led without appending (``assign_leader_epoch``) would otherwise stay
        its latest epoch, the one it asks its new leader about. Crash-safe order: epoch
        entries, the recovery point and the checkpointed HW first, then the cut segment
        (fsynced), then later segments oldest first, so a crash part-way leaves a hole that
        recovery cuts at (and does not mistake for a loss of durable data).
        """
        if offset < 0:
            raise InvalidRequestError(f"cannot truncate to negative offset {offset}")
        self._check_writable()
        with self._structure_lock, self._refusing_writes_after_fsync_failure():
            self._leading_epoch = None  # only a follower truncates
            if offset >= self.log_end_offset:
                self._epochs.truncate_from_end(self.log_end_offset)
                return
            if offset < self.log_start_offset:
                self.truncate_fully_and_start_at(offset)
                return
            segments = self._segments
            index = bisect_right(segments, offset, key=_base_offset) - 1
            cut_at = segments[index].batch_containing(offset)[1]
            if cut_at == segments[index].base_offset and index > 0:
                index -= 1
            self._epochs.truncate_from_end(cut_at)
            self._lower_durable_marks(cut_at)
            removed = segments[index + 1 :]
            with self._lock:
                self._generation += 1
                segments[index].truncate_to(cut_at)
                self._segments = segments[: index + 1]
                self._high_watermark = min(self._high_watermark, cut_at)
                self._flushed_offset = min(self._flushed_offset, cut_at)
            for segment in removed:
                segment.delete()
            fsync_directory(self._dir)
            self._lower_high_watermark_checkpoint()
            logger.info("%s: truncated to offset %d", self._dir, cut_at)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Empty the log; it restarts at ``offset`` (a follower far behind the leader's start)."""
        if offset < 0:
            raise InvalidRequestError(f"cannot start the log at negative offset {offset}")
        self._check_writable()
        with self._structure_lock:
            self._leading_epoch = None
            self._lower_durable_marks(RECOVER_EVERYTHING)
            self._epochs.clear()
            with self._lock:
                self._generation += 1
                for segment in reversed(self._segments):
                    segment.delete()
                fsync_directory(self._dir)
                new = LogSegment.create(self._dir, offset, self._config.index_interval_bytes)
                fsync_directory(self._dir)
                self._segments = (new,)
                self._high_watermark = offset
                self._flushed_offset = offset
            self._write_recovery_point(offset)
            self._lower_high_watermark_checkpoint()
            logger.info("%s: emptied, log now starts at offset %d", self._dir, offset)

    def _lower_durable_marks(self, offset: int) -> None:
        """Before removing offsets on purpose, lower the recovery point and the checkpointed
        HW to ``offset``: the next open compares the recovered log with them, and a crash
        part-way through a truncation must not look like a loss of durable data."""
        if self._recovery_point > offset:
            self._write_recovery_point(offset)
        with self._checkpoint_lock:
            checkpointed = self._checkpointed_high_watermark
            if checkpointed is None or checkpointed > offset:
                write_offset_checkpoint(self._dir / HIGH_WATERMARK_FILE, offset)
                self._checkpointed_high_watermark = offset

    # ================================================================== retention

    def delete_old_segments(
        self,
        *,
        retention_ms: int | None,
        retention_bytes: int | None,
        retention_messages: int | None,
        max_deletable_offset: int | None = None,
    ) -> int:
        """Delete whole sealed segments, oldest first, that a retention limit no longer needs;
        never at or past the HW nor ``max_deletable_offset`` (what the lake holds). Returns how
        many were deleted; the log start offset moves to the first remaining segment.

        Allowed on a log refusing appends (``_check_open`` only): whole sealed segments below
        the HW do not depend on the active segment's tail, and on a full disk deleting them is
        what frees space. So the files go before the leader-epoch checkpoint is rewritten
        (which needs space); entries left below the log start are cut again at open.
        """
        limits = RetentionLimits(retention_ms, retention_bytes, retention_messages)
        self._check_open()
        with self._structure_lock:
            segments, count = self._deletable(limits, max_deletable_offset)
            return self._drop_oldest(segments, count, "retention")

    def delete_segments_below(self, offset: int) -> int:
        """Delete the whole sealed segments that end at or below ``offset`` (never at or past
        the HW): what a ``__cursors`` snapshot at ``offset`` made redundant, on its leader and,
        following the leader's log start, on its followers. Returns how many were deleted."""
        self._check_open()
        with self._structure_lock:
            with self._lock:
                segments = self._segments
                bound = min(offset, self._high_watermark)
            count = 0
            for segment in segments[:-1]:
                if segment.next_offset > bound:
                    break
                count += 1
            return self._drop_oldest(segments, count, "a snapshot")

    def _drop_oldest(self, segments: Sequence[LogSegment], count: int, why: str) -> int:
        """Drop the ``count`` oldest of ``segments`` (the structure lock held)."""
        if not count:
            return 0
        with self._lock:
            self._segments = self._segments[count:]
        for segment in segments[:count]:
            segment.delete()
        self._epochs.truncate_from_start(self.log_start_offset)
        logger.info(
            "%s: %s deleted %d segment(s), log start offset now %d",
            self._dir,
            why,
            count,
            self.log_start_offset,
        )
        return count

    def deletable_segment_count(
        self, limits: RetentionLimits, max_deletable_offset: int | None = None
    ) -> int:
        """How many segments ``delete_old_segments`` would delete now, deleting nothing: a
        caller whose bound is costly to learn (a follower reads it from the lake) asks this
        first, unbounded, and skips the cost when the limits alone delete nothing."""
        return self._deletable(limits, max_deletable_offset)[1]

    def _deletable(
        self, limits: RetentionLimits, max_deletable_offset: int | None
    ) -> tuple[tuple[LogSegment, ...], int]:
        """The segments as they are now and how many of them, oldest first, may go."""
        with self._lock:
            segments = self._segments
            stats = [
                SegmentStats(s.base_offset, s.next_offset, s.size, s.max_timestamp_ms)
                for s in segments
            ]
            hw = self._high_watermark
        count = count_deletable(
            stats,
            limits,
            now_ms=self._now_ms(),
            high_watermark=hw,
            max_deletable_offset=max_deletable_offset,
        )
        return segments, count

    # ================================================================== lifecycle

    def close(self, *, clean: bool = True) -> None:
        """Flush, checkpoint HW and recovery point, mark the shutdown clean, close the fds.

        ``clean=False`` only closes the fds: the log is about to be deleted, and writing its
        checkpoints and indexes first is wasted work that fails on a full disk."""
        with self._structure_lock:
            if self._closed:
                return
            try:
                if clean and self._failure is None:
                    self._close_cleanly()
            finally:
                with self._lock:
                    self._closed = True
                    segments = self._segments
                for segment in segments:
                    segment.close()

    def _close_cleanly(self) -> None:
        active = self._segments[-1]
        with self._refusing_writes_after_fsync_failure():
            active.file.fsync()
        with self._lock:
            active.add_final_time_entry()
        active.persist_indexes(fsync=True)
        self._flushed_offset = self.log_end_offset
        self.checkpoint_high_watermark()
        self._write_recovery_point(self.log_end_offset)
        write_atomically(self._dir / CLEAN_SHUTDOWN_FILE, "")

    def delete(self) -> None:
        """Close the log (writing nothing) and remove its directory."""
        self.close(clean=False)
        try:
            shutil.rmtree(self._dir)
        except OSError as exc:
            raise StorageError(f"cannot delete log directory {self._dir}: {exc}") from exc

    def _check_open(self) -> None:
        if self._closed:
            raise LogClosedError(f"log {self._dir} is closed")

    def _check_writable(self) -> None:
        self._check_open()
        if self._fsync_failure is not None:
            raise StorageError(
                f"log {self._dir} refuses writes: an fsync failed ({self._fsync_failure})"
            )
        if self._failure is not None:
            raise StorageError(f"log {self._dir} refuses writes: {self._failure}")


# ====================================================================== helpers


def _base_offset(segment: LogSegment) -> int:
    return segment.base_offset


def _retained(file: SegmentFile) -> SegmentFile:
    if not file.retain():
        raise LogClosedError(f"segment {file.path} is closed")
    return file


def _release(views: list[_ReadView]) -> None:
    for view in views:
        view.file.release()


def _read_views(
    views: list[_ReadView], start_offset: int, upper_offset: int, max_bytes: int
) -> bytes:
    """Concatenate whole batches from the snapshot's segments within the limits."""
    parts: list[bytes] = []
    total = 0
    for view in views:
        begin, end, done = _batch_range(
            view, start_offset, upper_offset, max_bytes - total, total == 0
        )
        if begin < end:
            data = view.file.pread(end - begin, begin)
            if len(data) != end - begin:
                raise CorruptRecordError(f"{view.file.path}: short read at position {begin}")
            parts.append(data)
            total += len(data)
        if done:
            break
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _check_read_covers(data: bytes | None, start_offset: int, upper_offset: int) -> None:
    """A read below the upper bound starts with the batch holding ``start_offset``. The offset
    field lies outside the CRC, so a damaged one on disk would otherwise make the read skip
    records (a consumer stuck at an offset forever) or serve them under other offsets."""
    if data is None or start_offset >= upper_offset:
        return
    if not data:
        raise CorruptRecordError(f"no stored batch holds offset {start_offset}")
    header = parse_header(data)
    if not header.base_offset <= start_offset < header.next_offset:
        raise CorruptRecordError(
            f"the batch read for offset {start_offset} holds offsets "
            f"{header.base_offset}..{header.last_offset}"
        )


def _batch_range(
    view: _ReadView, start_offset: int, upper_offset: int, budget: int, must_take_one: bool
) -> tuple[int, int, bool]:
    """[begin, end) of the whole batches to take from one segment, and whether to stop there;
    CorruptRecordError where a batch does not continue the previous one's offsets."""
    begin = end = view.start
    expected: int | None = None
    for position, header in iter_headers(view.file, view.start, view.end):
        if expected is not None and header.base_offset != expected:
            raise CorruptRecordError(
                f"{view.file.path}: batch at position {position} starts at offset "
                f"{header.base_offset}, expected {expected}"
            )
        expected = header.next_offset
        if header.next_offset <= start_offset:
            begin = end = position + header.size
            continue
        if header.base_offset >= upper_offset:
            return begin, end, True
        if end - begin + header.size > budget and not (must_take_one and begin == end):
            return begin, end, True
        end = position + header.size
    return begin, end, False


def _first_offset_at_or_after(view: _ReadView, timestamp_ms: int) -> int | None:
    for position, header in iter_headers(view.file, view.start, view.end):
        if header.max_timestamp_ms < timestamp_ms:
            continue
        records = decode_records(view.file.pread(header.size, position))
        index: int = pc.index(pc.greater_equal(records.column(0), timestamp_ms), True).as_py()
        if index >= 0:
            return header.base_offset + index
    return None


def _load_or_create_segments(
    directory: Path, config: LogConfig, clean: bool, recovery_point: int
) -> list[LogSegment]:
    segments = load_segments(
        directory, config.index_interval_bytes, clean=clean, recovery_point=recovery_point
    )
    if segments:
        return segments
    return [LogSegment.create(directory, INITIAL_LOG_START_OFFSET, config.index_interval_bytes)]


def _read_checkpoint(path: Path) -> int | None:
    """An offset checkpoint; None when it is missing or unreadable, and callers then take the
    conservative choice (recover everything, commit nothing new)."""
    try:
        return read_offset_checkpoint(path)
    except CheckpointError as exc:
        logger.warning("ignoring unreadable checkpoint: %s", exc)
        return None


def _load_epochs(path: Path, segments: Sequence[LogSegment]) -> LeaderEpochCache:
    """The leader-epoch cache from its checkpoint, rebuilt from batch headers if it is missing
    or unreadable (slow, but the epochs are needed to fence divergent followers)."""
    try:
        cache = LeaderEpochCache.load(path)
    except CheckpointError as exc:
        logger.warning("rebuilding the leader-epoch cache: %s", exc)
        cache = None
    if cache is not None:
        return cache
    entries: list[tuple[int, int]] = []
    for segment in segments:
        for _, header in iter_headers(segment.file, 0, segment.size):
            if not entries or header.leader_epoch > entries[-1][0]:
                entries.append((header.leader_epoch, header.base_offset))
    cache = LeaderEpochCache(path, entries)
    cache.persist()
    return cache
