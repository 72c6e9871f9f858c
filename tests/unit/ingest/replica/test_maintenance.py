"""Idle-time upkeep and retention, driven by a manual clock: no NATS, no lake, no sleeps.

The schedule is pure (which steps are due when); the runner is checked against a recording
replica; retention runs on a real log with tiny segments.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from pathlib import Path

import pytest

from ingest.metrics import NodeMetrics
from ingest.replica.maintenance import DueWork, MaintenanceRunner, MaintenanceSchedule
from ingest.replica.retention import RetentionRunner
from ingest.replication.partition_state import Partition
from spark_log.config import LogConfig
from spark_log.errors import StorageError
from spark_log.log import PartitionLog, build_record_batch, encode_batch
from spark_log.log.errors import FsyncError
from spark_log.stream_spec import StreamSpec
from tests.unit.ingest.conftest import ManualClock

CONFIG = LogConfig(
    fsync="interval",
    fsync_interval_ms=100,
    hw_checkpoint_interval_ms=1_000,
    retention_check_interval_ms=5_000,
    segment_bytes=1024,
)


def test_schedule_says_what_is_due_as_time_passes(clock: ManualClock):
    schedule = MaintenanceSchedule(CONFIG, clock.now_ms())
    assert schedule.due(clock.now_ms()) == DueWork(flush=False, checkpoint=False, retention=False)
    clock.advance(100)
    assert schedule.due(clock.now_ms()) == DueWork(flush=True, checkpoint=False, retention=False)
    clock.advance(900)
    assert schedule.due(clock.now_ms()).checkpoint
    clock.advance(4_000)
    assert schedule.due(clock.now_ms()) == DueWork(flush=True, checkpoint=True, retention=True)


def test_only_the_interval_policy_flushes_on_a_timer(clock: ManualClock):
    schedule = MaintenanceSchedule(LogConfig(fsync="always"), clock.now_ms())
    clock.advance(10 * 60_000)
    assert not schedule.due(clock.now_ms()).flush


def _no_space() -> StorageError:
    """A StorageError raised from ENOSPC, as the log raises it on a full disk."""
    try:
        raise StorageError("disk full") from OSError(errno.ENOSPC, "No space left on device")
    except StorageError as exc:
        return exc


class RecordingLog:
    def __init__(self, fail: bool = False, checkpoint_error: StorageError | None = None) -> None:
        self.calls: list[str] = []
        self.fail = fail
        self.checkpoint_error = checkpoint_error

    def flush(self) -> None:
        if self.fail:
            raise FsyncError("disk gone") from OSError(errno.ENOSPC, "No space left on device")
        self.calls.append("flush")

    def checkpoint_high_watermark(self) -> None:
        if self.checkpoint_error is not None:
            raise self.checkpoint_error
        self.calls.append("checkpoint")


class RecordingDedup:
    """Stands in for the leader's ``DedupWindow``: records when it was expired."""

    def __init__(self) -> None:
        self.expired_at: list[int] = []

    def expire(self, now_ms: int) -> None:
        self.expired_at.append(now_ms)


class RecordingReplica:
    def __init__(self, log: RecordingLog) -> None:
        self.open_log = log
        self.state = Partition(
            broker_id=1, stream="s", partition=0, min_isr=1, leader_epoch=0, isr=[1]
        )
        self.offline_cause: BaseException | None = None
        self.isr_checks = 0
        self.dedup = RecordingDedup()
        self.expired_at = self.dedup.expired_at

    async def maintain_isr(self) -> None:
        self.isr_checks += 1

    def go_offline(self, reason: str, cause: BaseException | None = None) -> None:
        self.state.go_offline(reason)
        self.offline_cause = cause


def _runner(
    replica: RecordingReplica, clock: ManualClock, retention: object | None = None
) -> MaintenanceRunner:
    return MaintenanceRunner(
        replica,
        replica.state,
        CONFIG,
        retention or _no_retention(),  # type: ignore[arg-type]
        clock,
        dedup=lambda: replica.dedup,  # type: ignore[arg-type,return-value]
    )


def _no_retention() -> RetentionRunner:
    """A runner for a stream without limits: ``apply`` deletes nothing and reads nothing."""
    return RetentionRunner(
        spec=StreamSpec(name="s", subject="s.in"),
        partition=0,
        log_=_unreachable_log,
        lake_enabled=False,
        table_uri=None,
        lake_offset=lambda: None,
        lake_identity=None,
        metrics=NodeMetrics(),
    )


def _unreachable_log() -> PartitionLog:
    raise AssertionError("a stream without retention limits never reads its log")


async def test_runner_runs_due_steps_then_checks_isr_and_expires_dedup(clock: ManualClock):
    log = RecordingLog()
    replica = RecordingReplica(log)
    runner = _runner(replica, clock)
    await runner.run_once()
    assert log.calls == [] and replica.isr_checks == 1
    clock.advance(1_000)
    await runner.run_once()
    assert log.calls == ["flush", "checkpoint"]
    assert replica.expired_at == [clock.now_ms() - 1_000, clock.now_ms()]
    runner.flushed(clock.now_ms() + 50)  # the group commit fsynced: no timer fsync yet
    clock.advance(100)
    await runner.run_once()
    assert log.calls == ["flush", "checkpoint"]


async def test_a_failing_fsync_takes_the_replica_offline_and_never_as_a_full_disk(
    clock: ManualClock,
):
    replica = RecordingReplica(RecordingLog(fail=True))
    runner = _runner(replica, clock)
    clock.advance(100)
    await runner.run_once()
    assert replica.state.offline_reason == "log fsync failed: disk gone"
    assert replica.offline_cause is None, "an fsync failure must never be offered as a stall"
    assert replica.expired_at == []
    await runner.run_once()  # offline: nothing more runs
    assert replica.isr_checks == 0


async def test_a_full_disk_at_a_checkpoint_is_offered_as_the_cause(clock: ManualClock):
    no_space = _no_space()
    replica = RecordingReplica(RecordingLog(checkpoint_error=no_space))
    runner = _runner(replica, clock)
    clock.advance(1_000)
    await runner.run_once()
    assert replica.state.offline_reason == "log maintenance failed: disk full"
    assert replica.offline_cause is no_space


class CountingRetention:
    """Stands in for ``RetentionRunner``: counts rounds."""

    def __init__(self) -> None:
        self.rounds = 0

    async def apply(self) -> int:
        self.rounds += 1
        return 0


async def test_a_replica_stalled_by_a_full_disk_still_runs_retention_only(clock: ManualClock):
    log = RecordingLog()
    replica = RecordingReplica(log)
    replica.state.stall_for_space("disk full", clock.now_ms())
    retention = CountingRetention()
    runner = _runner(replica, clock, retention)
    clock.advance(4_999)
    await runner.run_once()
    assert retention.rounds == 0, "not due yet"
    clock.advance(1)
    await runner.run_once()
    await runner.run_once()
    assert retention.rounds == 1, "once per retention interval, as when serving"
    assert (log.calls, replica.isr_checks, replica.expired_at) == ([], 0, [])
    replica.state.go_offline("disk full")  # offline for good: not even retention
    clock.advance(5_000)
    await runner.run_once()
    assert retention.rounds == 1


@pytest.fixture
def small_log(tmp_path: Path, clock: ManualClock) -> Iterator[PartitionLog]:
    log = PartitionLog.open(tmp_path / "p0", CONFIG, now_ms=clock.now_ms)
    for offset in range(40):
        rb = build_record_batch([clock.now_ms()], [None], [b"x" * 200], [None], ["s.in"])
        log.append_many([encode_batch(offset, 0, rb)])
    log.set_high_watermark(log.log_end_offset)
    yield log
    log.close()


def _retention(log: PartitionLog, lake_offset: int | None, **limits: int) -> RetentionRunner:
    return RetentionRunner(
        spec=StreamSpec(name="s", subject="s.in", **limits),
        partition=0,
        log_=lambda: log,
        lake_enabled=lake_offset is not None,
        table_uri="file:///unused" if lake_offset is not None else None,
        lake_offset=lambda: lake_offset,
        lake_identity=None,
        metrics=NodeMetrics(),
    )


async def test_retention_deletes_old_segments_by_the_streams_limits(small_log: PartitionLog):
    assert await _retention(small_log, None).apply() == 0  # no limits: nothing goes
    deleted = await _retention(small_log, None, retention_messages=10).apply()
    assert deleted > 0
    assert small_log.log_start_offset > 0
    assert small_log.log_end_offset - small_log.log_start_offset >= 10


async def test_retention_never_passes_the_lake_offset(small_log: PartitionLog):
    assert await _retention(small_log, 0, retention_messages=1).apply() == 0  # lake holds none
    assert small_log.log_start_offset == 0
    assert await _retention(small_log, 5, retention_messages=1).apply() > 0
    assert 0 < small_log.log_start_offset <= 5
