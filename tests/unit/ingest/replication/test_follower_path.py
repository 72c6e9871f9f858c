"""The follower path on a real log: leader bytes appended as they are, the HW followed but
capped by the LEO, truncation reported, a failure taking the replica offline. No NATS."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from ingest.replication.follower_path import FollowerPath
from ingest.replication.partition_state import Partition
from spark_log.config import LogConfig
from spark_log.log import PartitionLog, build_record_batch, encode_batch
from tests.unit.ingest.conftest import ManualClock


class Hooks:
    def __init__(self) -> None:
        self.events: list[str] = []

    def on_high_watermark(self) -> None:
        """Not a hook: the path is handed it to wake the replica's waiting reads."""
        self.events.append("hw")

    def on_truncated(self, offset: int) -> None:
        self.events.append(f"truncated:{offset}")

    def on_log_changed(self) -> None:
        self.events.append("changed")

    def go_offline(self, reason: str, cause: BaseException | None = None) -> None:
        self.events.append(f"offline:{reason}")


@pytest.fixture
def log(tmp_path: Path, clock: ManualClock) -> Iterator[PartitionLog]:
    opened = PartitionLog.open(tmp_path / "p0", LogConfig(), now_ms=clock.now_ms)
    yield opened
    opened.close()


def _leader_bytes(clock: ManualClock, base: int, n: int, epoch: int = 3) -> bytes:
    rb = build_record_batch([clock.now_ms()] * n, [None] * n, [b"v"] * n, [None] * n, ["s"] * n)
    return encode_batch(base, epoch, rb)


def _path(log: PartitionLog, hooks: Hooks, lock: asyncio.Lock) -> FollowerPath:
    partition = Partition(
        broker_id=2, stream="s", partition=1, min_isr=1, leader_epoch=3, isr=[1, 2], leader_id=1
    )
    return FollowerPath(
        partition,
        lambda: log,
        lock,
        fsync_always=True,
        hooks=hooks,
        on_high_watermark=hooks.on_high_watermark,
    )


async def test_append_follow_and_truncate(log: PartitionLog, clock: ManualClock):
    hooks, lock = Hooks(), asyncio.Lock()
    path = _path(log, hooks, lock)
    assert (path.broker_id, path.stream_name, path.partition) == (2, "s", 1)
    assert (path.leader_id, path.leader_epoch, path.log_write_in_progress) == (1, 3, False)
    await path.append_replicated(_leader_bytes(clock, 0, 4) + _leader_bytes(clock, 4, 2))
    assert (log.log_end_offset, log.flushed_offset) == (6, 6)
    path.follow_high_watermark(10)  # the leader may be ahead: capped by this LEO
    assert log.high_watermark == 6
    path.follow_high_watermark(2)  # never backwards
    assert log.high_watermark == 6
    await path.truncate_to(4)
    assert log.log_end_offset == 4
    assert hooks.events == ["changed", "hw", "truncated:4", "changed"]


async def test_a_replication_failure_takes_the_replica_offline(log: PartitionLog):
    hooks = Hooks()
    _path(log, hooks, asyncio.Lock()).fail_replication("leader sent a corrupt batch")
    assert hooks.events == ["offline:replication failed: leader sent a corrupt batch"]
