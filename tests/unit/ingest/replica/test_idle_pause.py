"""The auto-pause decision (``IdleClock``) and the replica's mark and resume (``IdlePause``)
against a hand-driven clock and a fake ZooKeeper marker."""

from __future__ import annotations

import asyncio

import pytest

from coordinator.errors import ZkUnavailableError
from coordinator.znodes import PartitionState
from ingest.replica import idle_pause
from ingest.replica.idle_pause import IdleClock, IdlePause
from ingest.replication.partition_state import Partition
from spark_log.errors import StreamPausedError
from spark_log.stream_spec import CURSORS_STREAM, StreamSpec, internal_subject

LIMIT_MS = 1000
SPEC = StreamSpec("s", "s.in", auto_pause_ms=LIMIT_MS)


class FakeClock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def now_ms(self) -> int:
        return self.ms

    def monotonic_s(self) -> float:
        return self.ms / 1000


class FakeMarker:
    """Records the marks; ``fail`` makes them fail, ``hang`` wait for ``released``."""

    def __init__(self) -> None:
        self.marks: list[bool] = []
        self.fail = False
        self.hang = False
        self.released = asyncio.Event()

    async def __call__(self, idle: bool) -> None:
        if self.hang:
            await self.released.wait()
        if self.fail:
            raise ZkUnavailableError("ZooKeeper is unavailable")
        self.marks.append(idle)


def test_appends_decide_idleness_unless_auto_pause_is_off():
    clock = IdleClock(last_append_ms=0)
    assert not clock.idle(SPEC, LIMIT_MS - 1)
    assert clock.idle(SPEC, LIMIT_MS)
    clock.appended(LIMIT_MS)
    assert not clock.idle(SPEC, 2 * LIMIT_MS - 1)
    assert not clock.idle(StreamSpec("s", "s.in"), 10 * LIMIT_MS)


def test_internal_streams_never_pause():
    spec = StreamSpec(CURSORS_STREAM, internal_subject(CURSORS_STREAM), internal=True)
    spec = StreamSpec(**{**spec.__dict__, "auto_pause_ms": LIMIT_MS})
    assert not IdleClock(last_append_ms=0).idle(spec, 10 * LIMIT_MS)


def test_consumer_fetches_count_only_with_disable_if_subscribers():
    with_subscribers = StreamSpec(
        "s", "s.in", auto_pause_ms=LIMIT_MS, auto_pause_disable_if_subscribers=True
    )
    clock = IdleClock(last_append_ms=0)
    clock.fetch_started(LIMIT_MS // 2)
    assert clock.idle(SPEC, 5 * LIMIT_MS)  # fetches are not appends
    assert not clock.idle(with_subscribers, 5 * LIMIT_MS)  # a long-poll is waiting
    clock.fetch_ended(5 * LIMIT_MS)
    assert not clock.idle(with_subscribers, 6 * LIMIT_MS - 1)  # a recent fetch
    assert clock.idle(with_subscribers, 6 * LIMIT_MS)


def _leader() -> Partition:
    partition = Partition(broker_id=1, stream="s", partition=0, min_isr=1, leader_epoch=0, isr=[1])
    partition.enter(PartitionState.initial([1]))
    return partition


def _idle_pause() -> tuple[IdlePause, Partition, FakeClock, FakeMarker]:
    partition, clock, marker = _leader(), FakeClock(), FakeMarker()
    pause = IdlePause(partition, clock)
    pause.marker = marker
    return pause, partition, clock, marker


async def test_the_leader_marks_an_idle_partition_and_a_resume_unmarks_it():
    pause, partition, clock, marker = _idle_pause()
    await pause.pause_if_idle(SPEC)
    assert (marker.marks, partition.idle_paused) == ([], False)
    clock.ms += LIMIT_MS
    await pause.pause_if_idle(SPEC)
    assert (marker.marks, partition.idle_paused) == ([True], True)

    await asyncio.gather(pause.resume(), pause.resume())  # two waiters share one unmark
    assert (marker.marks, partition.idle_paused) == ([True, False], False)
    await pause.pause_if_idle(SPEC)  # the resume starts a new idle period
    assert marker.marks == [True, False]


async def test_an_operator_paused_partition_is_not_marked():
    pause, partition, clock, marker = _idle_pause()
    partition.paused = True
    clock.ms += 10 * LIMIT_MS
    await pause.pause_if_idle(SPEC)
    assert (marker.marks, partition.idle_paused) == ([], False)


async def test_a_failed_mark_is_tried_again_after_another_idle_period():
    pause, partition, clock, marker = _idle_pause()
    clock.ms += LIMIT_MS
    marker.fail = True
    await pause.pause_if_idle(SPEC)
    assert partition.idle_paused is False
    marker.fail = False
    await pause.pause_if_idle(SPEC)
    assert marker.marks == []
    clock.ms += LIMIT_MS
    await pause.pause_if_idle(SPEC)
    assert marker.marks == [True]


async def test_a_resume_that_fails_or_hangs_is_refused_with_stream_paused(monkeypatch):
    pause, partition, clock, marker = _idle_pause()
    clock.ms += LIMIT_MS
    await pause.pause_if_idle(SPEC)
    marker.fail = True
    with pytest.raises(StreamPausedError, match="ZooKeeper is unavailable"):
        await pause.resume()
    marker.fail, marker.hang = False, True
    monkeypatch.setattr(idle_pause, "RESUME_TIMEOUT_S", 0.01)
    with pytest.raises(StreamPausedError, match="could not be resumed"):
        await pause.resume()
    assert partition.idle_paused is True
    marker.released.set()  # the unmark still under way completes; the next resume joins it
    await pause.resume()
    assert (marker.marks, partition.idle_paused) == ([True, False], False)


def test_an_operator_resume_seen_in_zookeeper_starts_a_new_idle_period():
    pause, partition, clock, _marker = _idle_pause()
    pause.adopt(True)
    clock.ms += 5 * LIMIT_MS
    pause.adopt(False)
    assert partition.idle_paused is False
    assert not pause.clock.idle(SPEC, clock.ms + LIMIT_MS - 1)
