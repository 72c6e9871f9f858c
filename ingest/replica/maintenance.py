"""Idle-time upkeep of one partition replica: interval fsync, HW checkpoint, ISR, retention.

The writer runs one round after every cycle and whenever it idles (``IDLE_WAKEUP_S``), so
upkeep never races an append. What is due is decided by ``MaintenanceSchedule`` from the clock
alone (pure, unit-tested by moving a clock); the runner does the I/O. A failing fsync,
checkpoint or retention takes the partition offline: a log that cannot be written must stop
acknowledging. A failed fsync does so for good; a full disk only stalls the replica, and a
stalled replica still runs retention, which may be what frees the disk.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ingest.clock import Clock
from ingest.produce.dedup import DedupWindow
from ingest.replica.retention import RetentionRunner
from ingest.replication.partition_state import Partition
from spark_log.config import LogConfig
from spark_log.errors import LiftlogError
from spark_log.log import PartitionLog


@dataclass(frozen=True, slots=True)
class DueWork:
    """Which periodic steps one round must run."""

    flush: bool
    checkpoint: bool
    retention: bool


class MaintenanceSchedule:
    """When the periodic steps last ran, and which are due now."""

    def __init__(self, config: LogConfig, now_ms: int) -> None:
        self._interval_fsync = config.fsync == "interval"
        self._fsync_interval_ms = config.fsync_interval_ms
        self._checkpoint_interval_ms = config.hw_checkpoint_interval_ms
        self._retention_interval_ms = config.retention_check_interval_ms
        self.last_flush_ms = now_ms
        self.last_checkpoint_ms = now_ms
        self.last_retention_ms = now_ms

    def due(self, now_ms: int) -> DueWork:
        return DueWork(
            flush=self._interval_fsync and now_ms - self.last_flush_ms >= self._fsync_interval_ms,
            checkpoint=now_ms - self.last_checkpoint_ms >= self._checkpoint_interval_ms,
            retention=now_ms - self.last_retention_ms >= self._retention_interval_ms,
        )


@runtime_checkable
class MaintainedReplica(Protocol):
    """What upkeep needs from its replica."""

    @property
    def open_log(self) -> PartitionLog | None: ...

    async def maintain_isr(self) -> None: ...

    def go_offline(self, reason: str, cause: BaseException | None = None) -> None: ...


class MaintenanceRunner:
    """Runs the due steps of one round for one replica."""

    def __init__(
        self,
        replica: MaintainedReplica,
        partition: Partition,
        config: LogConfig,
        retention: RetentionRunner,
        clock: Clock,
        *,
        dedup: Callable[[], DedupWindow],
    ) -> None:
        """``dedup`` is the leader's deduplication window now (each leadership rebuilds it)."""
        self._replica = replica
        self._partition = partition
        self._dedup = dedup
        self._retention = retention
        self._clock = clock
        self.schedule = MaintenanceSchedule(config, clock.now_ms())

    def flushed(self, now_ms: int) -> None:
        """The writer's group commit fsynced: an interval fsync is not due before long."""
        self.schedule.last_flush_ms = now_ms

    async def run_once(self) -> None:
        """One round: the due periodic steps, the ISR check, then dedup expiry (only the
        retention step while the disk is full)."""
        log_ = self._replica.open_log
        if log_ is None:
            return
        now = self._clock.now_ms()
        if self._partition.offline_reason is not None:
            if self._partition.storage_stall is not None:
                await self._free_space(now)
            return
        due = self.schedule.due(now)
        if due.flush and not await self._flush(log_, now):
            return
        try:
            await self._run_due(log_, now, due)
        except (OSError, LiftlogError) as exc:
            self._replica.go_offline(f"log maintenance failed: {exc}", exc)
            return
        self._dedup().expire(now)

    async def _flush(self, log_: PartitionLog, now: int) -> bool:
        """The interval fsync; False (offline for good, never a full-disk stall, whatever the
        errno) if it failed: the kernel may have dropped the pages it could not write."""
        try:
            await asyncio.get_running_loop().run_in_executor(None, log_.flush)
        except (OSError, LiftlogError) as exc:
            self._replica.go_offline(f"log fsync failed: {exc}")
            return False
        self.schedule.last_flush_ms = now
        return True

    async def _free_space(self, now: int) -> None:
        """Retention while stalled by a full disk: it only deletes, and when the replica's own
        segments filled the disk it is the one thing that frees it."""
        if not self.schedule.due(now).retention:
            return
        try:
            await self._retention.apply()
        except (OSError, LiftlogError) as exc:
            self._replica.go_offline(f"retention failed while the disk is full: {exc}", exc)
            return
        self.schedule.last_retention_ms = now

    async def _run_due(self, log_: PartitionLog, now: int, due: DueWork) -> None:
        loop = asyncio.get_running_loop()
        if due.checkpoint:
            await loop.run_in_executor(None, log_.checkpoint_high_watermark)
            self.schedule.last_checkpoint_ms = now
        await self._replica.maintain_isr()
        if due.retention:
            await self._retention.apply()
            self.schedule.last_retention_ms = now
