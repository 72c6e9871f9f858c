"""A replica stalled by a full disk, without root or tmpfs: a real log on tmp_path whose roll
(or retry) is made to fail with ENOSPC. Checked here: a cycle stored only in part is answered
per request (stored ones acknowledged, the rest refused with their msg ids forgotten), the
gauges, a stall ended for good while a retry runs, a retry task that dies, and a follower's
fetcher waiting while its replica is stalled.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import SimpleNamespace

import nats.errors
import pyarrow as pa
import pytest

from ingest.metrics import NodeMetrics
from ingest.produce.request import ProduceAck, ProduceRequest, normalize_batch_table
from ingest.replica.replica import PartitionReplica
from ingest.replication.fetcher import ReplicaFetcher
from ingest.replication.partition_state import ROLE_LEADER
from spark_log.config import LogConfig, NodeConfig
from spark_log.errors import StorageError
from spark_log.log import PartitionLog
from spark_log.log.errors import FsyncError
from spark_log.log.segment import LogSegment
from spark_log.stream_spec import StreamSpec
from tests.support.waiting import one_loop_turn
from tests.unit.ingest.conftest import ManualClock, RecordingIntake, eventually

SPEC = StreamSpec(name="orders", subject="orders.in", ack_policy="all")
RECORDS_PER_REQUEST = 4
VALUE = b"v" * 150  # one request's batch fits a 1 KiB segment, two do not: a roll between


def _no_space() -> StorageError:
    """What the log raises when the disk is full: a StorageError from ENOSPC."""
    try:
        raise StorageError("disk full") from OSError(errno.ENOSPC, "No space left on device")
    except StorageError as exc:
        return exc


@pytest.fixture
def metrics() -> NodeMetrics:
    return NodeMetrics()


@pytest.fixture
async def leader(
    tmp_path: Path, clock: ManualClock, metrics: NodeMetrics
) -> AsyncIterator[PartitionReplica]:
    """Broker 1 leading orders/0 alone (ISR [1]), fsync=never, 1 KiB segments, open."""
    replica = _leader(tmp_path, clock, metrics, "never")
    await replica.open()
    yield replica
    await replica.close()


@pytest.fixture
async def syncing_leader(
    tmp_path: Path, clock: ManualClock, metrics: NodeMetrics
) -> AsyncIterator[PartitionReplica]:
    """The same leader with fsync=always."""
    replica = _leader(tmp_path, clock, metrics, "always")
    await replica.open()
    yield replica
    await replica.close()


def _leader(
    tmp_path: Path, clock: ManualClock, metrics: NodeMetrics, fsync: str
) -> PartitionReplica:
    replica = PartitionReplica(
        spec=SPEC,
        partition=0,
        directory=tmp_path / "orders" / "0",
        config=NodeConfig(
            broker_id=1,
            data_dir=str(tmp_path),
            log=LogConfig(fsync=fsync, segment_bytes=1024),
        ),
        metrics=metrics,
        intake=RecordingIntake(),
        leader_epoch=0,
        isr=[1],
        created_at_ms=clock.now_ms(),
        clock=clock,
    )
    replica.state.replicas = (1,)
    replica.state.role = ROLE_LEADER
    replica.state.start_leadership(clock.now_ms())
    return replica


def _request(msg_id: str) -> ProduceRequest:
    """A producer batch of RECORDS_PER_REQUEST records: a batch of its own in the log."""
    table = pa.table({"value": pa.array([VALUE] * RECORDS_PER_REQUEST, pa.binary())})
    records = normalize_batch_table(table, SPEC)
    return ProduceRequest(SPEC.subject, None, "all", msg_id, None, records=records)


async def _publish(
    replica: PartitionReplica, msg_ids: list[str]
) -> list[ProduceAck | BaseException]:
    """Publish one request per id in a single writer cycle; each request's ack or error."""
    requests = [_request(msg_id) for msg_id in msg_ids]
    producing = asyncio.create_task(replica.produce(requests))
    await one_loop_turn()  # produce() queues them all (and creates their futures) at once
    futures = [req.future for req in requests if req.future is not None]
    assert len(futures) == len(requests)
    results = await asyncio.gather(*futures, return_exceptions=True)
    await asyncio.gather(producing, return_exceptions=True)
    return results


def _gauge(metrics: NodeMetrics, name: str) -> float | None:
    return metrics.registry.get_sample_value(name)


def _assert_partition_gauges(metrics: NodeMetrics, *, offline: int, stalled: int) -> None:
    """The node's offline and storage-stalled partition counts: a stall is offline too, while
    an offline partition is stalled only if a retry may bring it back."""
    assert _gauge(metrics, "liftlog_offline_partitions") == offline
    assert _gauge(metrics, "liftlog_storage_stalled_partitions") == stalled


def _fail_rolls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Creating the next segment fails for lack of space: batches before the roll stay."""

    def no_space(cls: type[LogSegment], *args: object) -> LogSegment:
        raise _no_space()

    monkeypatch.setattr(LogSegment, "create", classmethod(no_space))


def _gate_retries(monkeypatch: pytest.MonkeyPatch, disk_full: threading.Event) -> None:
    """Retries find the disk full while ``disk_full`` is set, then really resume."""
    resume = PartitionLog.resume_writes

    def gated(log_: PartitionLog, probe_bytes: int) -> None:
        if disk_full.is_set():
            raise _no_space()
        resume(log_, probe_bytes)

    monkeypatch.setattr(PartitionLog, "resume_writes", gated)


async def _retry_ended(replica: PartitionReplica) -> None:
    """Wait for the replica's storage retry task to end (white box: it is private)."""
    task = replica.storage_retry._task
    if task is not None:
        await asyncio.wait([task], timeout=10)


async def test_a_cycle_stored_in_part_acks_the_stored_requests_and_refuses_the_rest(
    leader: PartitionReplica, metrics: NodeMetrics, monkeypatch: pytest.MonkeyPatch
):
    disk_full = threading.Event()
    disk_full.set()
    _gate_retries(monkeypatch, disk_full)
    _fail_rolls(monkeypatch)

    stored, refused, refused_too = await _publish(leader, ["a", "b", "c"])

    assert stored == ProduceAck(0, RECORDS_PER_REQUEST, False), "stored: acknowledged"
    assert isinstance(refused, StorageError) and isinstance(refused_too, StorageError)
    assert leader.log.log_end_offset == RECORDS_PER_REQUEST
    assert leader.log.high_watermark == RECORDS_PER_REQUEST, "the stored part is committed"
    assert leader.state.storage_stall is not None and leader.state.offline_reason is not None
    _assert_partition_gauges(metrics, offline=1, stalled=1)

    monkeypatch.undo()  # rolls work again, and so do retries: the disk has space
    disk_full.clear()
    await eventually(lambda: leader.state.storage_stall is None, what="writes resumed")
    assert leader.state.offline_reason is None
    _assert_partition_gauges(metrics, offline=0, stalled=0)

    again = await _publish(leader, ["a", "b", "c"])
    n = RECORDS_PER_REQUEST
    assert again == [
        ProduceAck(0, n, True),  # stored before the stall: a duplicate, not stored again
        ProduceAck(n, n, False),  # refused then: its id was forgotten, so stored once now
        ProduceAck(2 * n, n, False),
    ]
    assert leader.log.log_end_offset == 3 * n


async def test_a_failed_fsync_is_never_a_stall_even_with_enospc(
    syncing_leader: PartitionReplica, metrics: NodeMetrics, monkeypatch: pytest.MonkeyPatch
):
    """The pages the fsync could not write may be gone while reading back fine: the replica
    goes offline for good, and no retry puts it back once fsync "works" again."""

    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fdatasync", no_space)
    (refused,) = await _publish(syncing_leader, ["a"])
    monkeypatch.undo()

    assert isinstance(refused, StorageError)
    assert syncing_leader.state.storage_stall is None
    assert (syncing_leader.state.offline_reason or "").startswith("log fsync failed")
    _assert_partition_gauges(metrics, offline=1, stalled=0)
    with pytest.raises(FsyncError):
        syncing_leader.log.resume_writes(4096)
    with pytest.raises(StorageError, match="offline: log fsync failed"):
        await syncing_leader.produce([_request("b")])


async def test_a_stall_ended_for_good_during_a_retry_is_not_resumed(
    leader: PartitionReplica, metrics: NodeMetrics, monkeypatch: pytest.MonkeyPatch
):
    entered, release = threading.Event(), threading.Event()
    resume = PartitionLog.resume_writes

    def slow_resume(log_: PartitionLog, probe_bytes: int) -> None:
        entered.set()
        release.wait(10)
        resume(log_, probe_bytes)

    monkeypatch.setattr(PartitionLog, "resume_writes", slow_resume)
    leader.follower_path.fail_replication("append failed", _no_space())
    assert leader.state.storage_stall is not None
    await eventually(entered.is_set, what="a retry running")

    leader.go_offline("log fsync failed: lost pages")  # the flusher, meanwhile: for good
    release.set()
    await _retry_ended(leader)

    assert leader.state.offline_reason == "log fsync failed: lost pages"
    assert leader.state.storage_stall is None
    _assert_partition_gauges(metrics, offline=1, stalled=0)


async def test_a_retry_that_dies_unexpectedly_is_logged_and_goes_offline_for_good(
    leader: PartitionReplica, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    def broken(log_: PartitionLog, probe_bytes: int) -> None:
        raise KeyError("a bug")

    monkeypatch.setattr(PartitionLog, "resume_writes", broken)
    leader.go_offline("log append failed: disk full", _no_space())
    with caplog.at_level(logging.ERROR, logger="liftlog.storage_stall"):
        await _retry_ended(leader)
    assert leader.state.storage_stall is None
    assert leader.state.offline_reason is not None and "unexpectedly" in leader.state.offline_reason
    assert any(r.exc_info is not None for r in caplog.records), "logged with its traceback"
    await leader.close()  # never raises the task's error


class _FollowerStub:
    """The part of a follower replica the fetcher reads, with an empty log."""

    broker_id, stream_name, partition, leader_id, leader_epoch = 2, "orders", 0, 1, 0
    active_throttle = None
    log_write_in_progress = False

    def __init__(self) -> None:
        self.stalled = True
        self.stall_checks = 0  # how often the fetcher asked (once per turn of its loop)
        self.log = SimpleNamespace(latest_epoch=None, log_end_offset=0)

    @property
    def storage_stalled(self) -> bool:
        self.stall_checks += 1
        return self.stalled


class _RecordingNats:
    """Counts the requests the fetcher sends; every one times out."""

    def __init__(self) -> None:
        self.requests: list[str] = []

    async def request(self, subject: str, data: bytes, timeout: float) -> None:
        self.requests.append(subject)
        raise nats.errors.TimeoutError


async def test_a_stalled_followers_fetcher_waits_then_fetches_once_it_has_space():
    replica, nc = _FollowerStub(), _RecordingNats()
    fetcher = ReplicaFetcher(replica, nc, "cluster")  # type: ignore[arg-type]
    fetcher.start()
    try:
        await eventually(lambda: replica.stall_checks > 3, what="three backoffs while stalled")
        assert nc.requests == []  # it fetched in none of them
        replica.stalled = False
        await eventually(_fetched(nc), what="a fetch once the stall ended")
    finally:
        await fetcher.stop()


def _fetched(nc: _RecordingNats) -> Callable[[], bool]:
    return lambda: bool(nc.requests)
