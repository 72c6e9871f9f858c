"""The retry that brings a replica stalled by a full disk back: re-probe the log with backoff.

``storage_stall`` decides what a full disk is and how long to wait; this runs it. A stalled
replica refuses writes while one background task re-probes its log (``resume_writes``) under
the write lock, and serves its role again once the disk takes writes. The retry also keeps the
replica in the offline gauges, since a stall, its end and going offline for good all move them.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol, runtime_checkable

from ingest.clock import Clock
from ingest.metrics import NodeMetrics
from ingest.replication.partition_state import Partition
from ingest.replication.storage_stall import Backoff, StallEnd, StorageStall, is_out_of_space
from spark_log.errors import LiftlogError
from spark_log.log import PartitionLog

log = logging.getLogger("liftlog.storage_stall")

SPACE_PROBE_BYTES = 64 * 1024
"""The free space a replica stalled by a full disk must find before it takes writes again."""


@runtime_checkable
class StalledReplica(Protocol):
    """What the retry needs from the replica it brings back."""

    @property
    def open_log(self) -> PartitionLog | None: ...

    def go_offline(self, reason: str, cause: BaseException | None = None) -> None:
        """Offline for good when called without ``cause`` (a retry failed otherwise)."""
        ...

    def advance_high_watermark(self) -> None: ...

    def on_log_changed(self) -> None:
        """The log took writes again: its gauges follow."""
        ...


class StorageStallRetry:
    """One replica's full-disk stalls: entering one, retrying it, and leaving it."""

    def __init__(
        self,
        replica: StalledReplica,
        partition: Partition,
        write_lock: asyncio.Lock,
        metrics: NodeMetrics,
        clock: Clock,
    ) -> None:
        self._replica = replica
        self._partition = partition
        self._write_lock = write_lock
        self._metrics = metrics
        self._clock = clock
        self._backoff = Backoff()
        self._task: asyncio.Task[None] | None = None
        self._last_end: StallEnd | None = None  # its backoff carries over to the next stall
        self._closing = asyncio.Event()  # wakes a retry's backoff wait at close

    def may_stall(self, cause: BaseException) -> bool:
        """Whether ``cause`` only stalls the replica: a full disk, on a replica that is open,
        not closing and not already offline for good (which it stays)."""
        part = self._partition
        stallable = part.offline_reason is None or part.storage_stall is not None
        stallable = stallable and self._replica.open_log is not None
        return stallable and not self._closing.is_set() and is_out_of_space(cause)

    def stall(self, reason: str) -> None:
        """Refuse writes with ``storage_error`` and retry in the background with backoff (a
        replica already stalled keeps the retry it has)."""
        if self._partition.storage_stall is not None:
            return
        log.error(
            "%s: disk full, refusing writes until it has space: %s", self._partition.name, reason
        )
        first_attempt = self._backoff.first_attempt(self._last_end, self._clock.monotonic_s())
        self._count_offline(False)
        self._partition.stall_for_space(reason, self._clock.now_ms(), first_attempt)
        self._count_offline(True)
        task = asyncio.create_task(self._retry(), name=f"storage-retry-{self._partition.name}")
        task.add_done_callback(self._on_retry_ended)
        self._task = task

    def go_offline(self, reason: str) -> None:
        """Offline for good (until the node restarts); a retry running now stops there."""
        self._count_offline(False)
        self._partition.go_offline(reason)
        self._count_offline(True)

    async def close(self) -> None:
        """End a retry (one re-probing the log finishes first) and take the replica out of
        the offline gauges for good."""
        self._count_offline(False)
        self._closing.set()
        task, self._task = self._task, None
        if task is not None:
            await asyncio.wait([task])  # never raises: _on_retry_ended logs a failure

    def _count_offline(self, add: bool) -> None:
        """Move the offline gauges by the replica's state (+1 with ``add``, -1 without); a
        closed replica is out of them for good."""
        if self._closing.is_set():
            return
        step = 1 if add else -1
        if self._partition.offline_reason is not None:
            self._metrics.offline_partitions.inc(step)
        if self._partition.storage_stall is not None:
            self._metrics.storage_stalled_partitions.inc(step)

    async def _retry(self) -> None:
        """Re-probe the log with exponential backoff until it takes writes again (then the
        replica serves its role again), the replica closes, or another failure takes it
        offline for good."""
        part = self._partition
        retries = self._metrics.storage_retries.labels(part.stream, str(part.partition))
        while (stall := part.storage_stall) is not None:
            if await self._closing_within(self._backoff.delay_s(stall.attempt)):
                return
            log_ = self._replica.open_log
            if log_ is None or part.storage_stall is not stall:
                return
            retries.inc()
            try:
                async with self._write_lock:
                    await asyncio.get_running_loop().run_in_executor(
                        None, log_.resume_writes, SPACE_PROBE_BYTES
                    )
            except (OSError, LiftlogError) as exc:
                if not is_out_of_space(exc):
                    self._replica.go_offline(f"recovery from a full disk failed: {exc}")
                    return
                stall.retry_failed(str(exc))
                log.debug("%s: disk still full (retry %d)", part.name, stall.retries)
                continue
            if part.storage_stall is not stall or self._closing.is_set():
                return  # meanwhile offline for good (a failed fsync) or closing: stay so
            self._resume(stall)

    def _on_retry_ended(self, task: asyncio.Task[None]) -> None:
        """A retry that died of an unexpected error would leave the replica stalled for ever
        with nobody retrying, and silently: log it and go offline for good."""
        if task.cancelled() or (exc := task.exception()) is None:
            return
        log.error(
            "%s: retrying after a full disk failed unexpectedly",
            self._partition.name,
            exc_info=exc,
        )
        self._replica.go_offline(f"recovery from a full disk failed unexpectedly: {exc!r}")

    async def _closing_within(self, delay_s: float) -> bool:
        """Wait ``delay_s`` (a retry's backoff); True at once if the replica is closing."""
        try:
            await asyncio.wait_for(self._closing.wait(), delay_s)
        except TimeoutError:
            return False
        return True

    def _resume(self, stall: StorageStall) -> None:
        """Serve the role again; a stall soon after this one backs off from where it ended."""
        log.warning(
            "%s: disk has space again, writes resumed (%d retries)",
            self._partition.name,
            stall.retries,
        )
        self._last_end = StallEnd(self._clock.monotonic_s(), stall.attempt)
        self._count_offline(False)
        self._partition.resume_after_stall()
        self._replica.advance_high_watermark()
        self._replica.on_log_changed()
