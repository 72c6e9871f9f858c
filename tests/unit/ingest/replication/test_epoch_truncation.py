"""Truncation by leader epoch (KIP-101/279) between real logs, through the real fetcher and
fetch server over an in-memory NATS: after every election the follower must hold, offset by
offset, the records the leader holds (same leader epoch, same bytes).

Each record is its own batch, so comparing batches compares offsets. The divergent cases are
the ones a single epoch query or a leader that records its epoch only on its first append
gets wrong: an unclean election of a replica with a tail of an older epoch, a double
failover, and a follower whose latest epoch the leader never saw.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from coordinator.znodes import PartitionState
from ingest.metrics import NodeMetrics
from ingest.replica.replica import PartitionReplica
from ingest.replication.fetch_server import FetchServer
from ingest.replication.fetcher import ReplicaFetcher
from ingest.replication.follower_path import FollowerPath
from ingest.replication.partition_state import ROLE_LEADER, Partition
from ingest.replication.tail_cache import TailCache
from spark_log.config import LogConfig, NodeConfig
from spark_log.log import PartitionLog, build_record_batch, encode_batch, iter_batches
from spark_log.stream_spec import StreamSpec
from tests.support.waiting import wait_for_async
from tests.unit.ingest.conftest import ManualClock, RecordingIntake, eventually

STREAM, PARTITION = "s", 0
LEADER, FOLLOWER = 1, 2


# ----------------------------------------------------------------- an in-memory NATS


@dataclass
class _Msg:
    subject: str
    data: bytes
    reply: str = ""
    headers: dict[str, str] | None = None


class _Sub:
    def __init__(self, nc: LoopbackNats, subject: str) -> None:
        self._nc, self._subject = nc, subject

    async def unsubscribe(self) -> None:
        self._nc.handlers.pop(self._subject, None)


@dataclass
class LoopbackNats:
    """Request/reply between a FetchServer and a ReplicaFetcher in one event loop."""

    max_payload: int = 1 << 20
    handlers: dict[str, Callable[[Any], Awaitable[None]]] = field(default_factory=dict)
    waiting: dict[str, asyncio.Future[_Msg]] = field(default_factory=dict)
    epoch_queries: list[int] = field(default_factory=list)
    _inbox: Iterator[int] = field(default_factory=itertools.count)

    async def subscribe(
        self, subject: str, cb: Callable[[Any], Awaitable[None]], **_options: Any
    ) -> _Sub:
        self.handlers[subject] = cb
        return _Sub(self, subject)

    async def request(self, subject: str, data: bytes, timeout: float) -> _Msg:
        if ".epoch." in subject:
            self.epoch_queries.append(int(json.loads(data)["epoch"]))
        reply = f"_INBOX.{next(self._inbox)}"
        answer: asyncio.Future[_Msg] = asyncio.get_running_loop().create_future()
        self.waiting[reply] = answer
        await self.handlers[subject](_Msg(subject, data, reply))
        return await asyncio.wait_for(answer, timeout)

    async def publish(
        self, subject: str, data: bytes, headers: dict[str, str] | None = None
    ) -> None:
        answer = self.waiting.pop(subject, None)
        if answer is not None and not answer.done():  # a stopped fetcher stopped waiting
            answer.set_result(_Msg(subject, data, headers=headers))


# ----------------------------------------------------------------- the two replicas


class LeaderSide:
    """What FetchServer needs of the leader replica, over a real log."""

    def __init__(self, log: PartitionLog, leader_epoch: int) -> None:
        self.log = log
        self.open_log: PartitionLog | None = log
        self.state = Partition(
            broker_id=LEADER,
            stream=STREAM,
            partition=PARTITION,
            min_isr=1,
            leader_epoch=leader_epoch,
            isr=[LEADER, FOLLOWER],
            replicas=(LEADER, FOLLOWER),
        )
        self.state.role = ROLE_LEADER
        self.tail_cache = TailCache()
        self.tasks: list[asyncio.Task[Any]] = []

    def track_task(self, task: asyncio.Task[Any]) -> None:
        self.tasks.append(task)

    def record_follower_fetch(self, replica_id: int, fetch_offset: int) -> None:
        pass

    async def wait_for_append(self, wait_ms: int) -> None:
        """The long poll: until the log grows past where it was, or ``wait_ms``."""
        end = self.log.log_end_offset
        with contextlib.suppress(AssertionError):  # no append within the wait: answer empty
            await wait_for_async(lambda: self.log.log_end_offset > end, wait_ms / 1000)


async def _no_acks() -> None:
    """Nothing is produced here, so no ack waits for a follower's fetch."""


def fetch_server(leader_side: LeaderSide, nc: LoopbackNats) -> FetchServer:
    return FetchServer(leader_side, nc, "c", send_acks=_no_acks, metrics=NodeMetrics())


class Hooks:
    def on_high_watermark(self) -> None:
        """Not a hook: the path is handed it to wake the replica's waiting reads."""

    def on_truncated(self, offset: int) -> None:
        pass

    def on_log_changed(self) -> None:
        pass

    def go_offline(self, reason: str, cause: BaseException | None = None) -> None:
        raise AssertionError(f"follower went offline: {reason}")


@pytest.fixture
def open_log(tmp_path: Path, clock: ManualClock) -> Iterator[Callable[[str], PartitionLog]]:
    opened: list[PartitionLog] = []

    def open_(name: str) -> PartitionLog:
        log = PartitionLog.open(tmp_path / name, LogConfig(), now_ms=clock.now_ms)
        opened.append(log)
        return log

    yield open_
    for log in opened:
        log.close()


def record(offset: int, epoch: int, tag: str = "") -> bytes:
    """One batch holding one record whose value names its offset, epoch and writer."""
    value = f"{tag}e{epoch}o{offset}".encode()
    rb = build_record_batch([1_700_000_000_000], [None], [value], [None], [STREAM])
    return encode_batch(offset, epoch, rb)


def write(log: PartitionLog, first: int, last: int, epoch: int, tag: str = "") -> None:
    """Append offsets first..last (inclusive), each written in leader epoch ``epoch``."""
    for offset in range(first, last + 1):
        log.append(record(offset, epoch, tag))


def batches(log: PartitionLog) -> list[tuple[int, int, bytes]]:
    """(offset, leader epoch, bytes) of every record, in offset order."""
    data = log.read(log.log_start_offset, 1 << 24) if log.log_end_offset else b""
    return [(h.base_offset, h.leader_epoch, bytes(view)) for h, view in iter_batches(data)]


def start_fetcher(follower: PartitionLog, leader_epoch: int, nc: LoopbackNats) -> ReplicaFetcher:
    """The follower's real fetcher, started against LEADER at ``leader_epoch`` over ``nc``."""
    partition = Partition(
        broker_id=FOLLOWER,
        stream=STREAM,
        partition=PARTITION,
        min_isr=1,
        leader_epoch=leader_epoch,
        isr=[LEADER],
        replicas=(LEADER, FOLLOWER),
        leader_id=LEADER,
    )
    hooks = Hooks()
    path = FollowerPath(
        partition, lambda: follower, asyncio.Lock(), False, hooks, hooks.on_high_watermark
    )
    fetcher = ReplicaFetcher(path, nc, "c")
    fetcher.start()
    return fetcher


async def follow(
    leader: PartitionLog, follower: PartitionLog, leader_epoch: int, nc: LoopbackNats | None = None
) -> LoopbackNats:
    """Run the follower's fetcher against the leader until both logs end at the same offset
    (or the wait times out); the fetcher is stopped before returning. Without ``nc`` a
    FetchServer over ``leader`` answers; with it, whoever serves on ``nc`` does."""
    leader_side = LeaderSide(leader, leader_epoch)
    server: FetchServer | None = None
    if nc is None:
        nc = LoopbackNats()
        server = fetch_server(leader_side, nc)
        await server.start()
    fetcher = start_fetcher(follower, leader_epoch, nc)
    try:
        await eventually(
            lambda: nc.epoch_queries and follower.log_end_offset == leader.log_end_offset,
            timeout_s=3.0,
            what="the follower caught up",
        )
    except AssertionError:
        pass  # the comparison that follows says what differs
    finally:
        await fetcher.stop()
        if server is not None:
            await server.stop()
        await asyncio.gather(*leader_side.tasks, return_exceptions=True)
    return nc


def assert_agree(leader: PartitionLog, follower: PartitionLog) -> None:
    assert batches(follower) == batches(leader)
    leo = leader.log_end_offset
    assert follower.epoch_entries == [e for e in leader.epoch_entries if e[1] < leo]


# ----------------------------------------------------------------- (a) unclean election


@pytest.mark.parametrize("appended_first", [False, True], ids=["before-append", "after-append"])
async def test_unclean_election_of_a_candidate_with_an_older_epoch_tail(
    open_log: Callable[[str], PartitionLog], appended_first: bool
) -> None:
    """The reviewer's case: the candidate holds 10..12 of epoch 5, the holder 10..30 of epoch
    6 (all committed on it). Electing the candidate (epoch 7) must cut the holder to 10,
    below its HW, whether it asks before or after the new leader's first append."""
    candidate, holder = open_log("candidate"), open_log("holder")
    for log in (candidate, holder):
        write(log, 0, 9, 3)
    write(candidate, 10, 12, 5, "c")
    write(holder, 10, 30, 6, "h")
    holder.set_high_watermark(31)
    candidate.assign_leader_epoch(7)
    if appended_first:
        write(candidate, 13, 14, 7, "new")
    nc = await follow(candidate, holder, 7)
    assert_agree(candidate, holder)
    assert [offset for offset, epoch, _ in batches(holder) if epoch == 5] == [10, 11, 12]
    # 6 first: the leader answers with epoch 5, which the holder never had, so it cuts
    # where its epoch 6 started and asks again about epoch 3
    assert nc.epoch_queries == [6, 3]
    write(candidate, holder.log_end_offset, holder.log_end_offset + 2, 7, "later")
    await follow(candidate, holder, 7)
    assert_agree(candidate, holder)


async def test_a_deposed_leader_that_never_appended_drops_its_epoch(
    open_log: Callable[[str], PartitionLog],
) -> None:
    """The candidate above led epoch 7 without appending, then the holder was elected (8):
    the candidate's empty epoch 7 goes and its epoch 5 tail is cut to 10."""
    candidate, holder = open_log("candidate"), open_log("holder")
    for log in (candidate, holder):
        write(log, 0, 9, 3)
    write(candidate, 10, 12, 5, "c")
    write(holder, 10, 30, 6, "h")
    candidate.assign_leader_epoch(7)
    holder.assign_leader_epoch(8)
    nc = await follow(holder, candidate, 8)
    assert_agree(holder, candidate)
    assert nc.epoch_queries == [7, 5]


# ----------------------------------------------------------------- (b) double failover


@pytest.mark.parametrize("appended_first", [False, True], ids=["before-append", "after-append"])
async def test_double_failover(
    open_log: Callable[[str], PartitionLog], appended_first: bool
) -> None:
    """A leads epoch 1 and writes 0..9, B has 0..7; A dies, B leads epoch 2 alone and writes
    (and commits) 8..11; B dies, A comes back as leader in epoch 3. B must truncate to 8 and
    fetch A's 8, 9 (epoch 1) and what A wrote since."""
    a, b = open_log("a"), open_log("b")
    write(a, 0, 9, 1)
    write(b, 0, 7, 1)
    b.assign_leader_epoch(2)
    write(b, 8, 11, 2, "b")
    b.set_high_watermark(12)
    a.assign_leader_epoch(3)
    if appended_first:
        write(a, 10, 13, 3, "a")
    nc = await follow(a, b, 3)
    assert_agree(a, b)
    assert nc.epoch_queries == [2]
    assert [(offset, epoch) for offset, epoch, _ in batches(b)][7:11] == [
        (7, 1),
        (8, 1),
        (9, 1),
        *([(10, 3)] if appended_first else []),
    ]


# ----------------------------------------------------------------- (c) unknown latest epoch


async def test_a_follower_whose_latest_epoch_the_leader_never_saw(
    open_log: Callable[[str], PartitionLog],
) -> None:
    """The follower holds epochs 1 (0..4), 2 (5..7) and 4 (8..9), the leader epochs 1 (0..6)
    and 3 (7..12) and leads epoch 5. Asked about 4 the leader answers epoch 3, unknown to
    the follower: it cuts its epoch 4 (at 8), asks about 2, is answered epoch 1 ending at 7
    and cuts to 5, where its own epoch 1 ends."""
    leader, follower = open_log("leader"), open_log("follower")
    write(leader, 0, 4, 1)
    write(follower, 0, 4, 1)
    write(leader, 5, 6, 1)
    write(leader, 7, 12, 3, "l")
    write(follower, 5, 7, 2, "f")
    write(follower, 8, 9, 4, "f")
    follower.set_high_watermark(10)
    leader.assign_leader_epoch(5)
    nc = await follow(leader, follower, 5)
    assert_agree(leader, follower)
    assert nc.epoch_queries == [4, 2]


async def test_an_empty_leader_empties_the_follower(
    open_log: Callable[[str], PartitionLog],
) -> None:
    """An unclean election of an empty replica: every epoch of the follower is older or
    newer than the leader's only one, which starts at 0, so nothing is kept."""
    leader, follower = open_log("leader"), open_log("follower")
    write(follower, 0, 9, 2)
    follower.set_high_watermark(10)
    leader.assign_leader_epoch(4)
    write(leader, 0, 1, 4, "l")
    await follow(leader, follower, 4)
    assert_agree(leader, follower)


async def test_a_clean_follower_is_not_truncated(open_log: Callable[[str], PartitionLog]) -> None:
    """A follower whose log is a prefix of the leader's keeps everything and catches up."""
    leader, follower = open_log("leader"), open_log("follower")
    write(leader, 0, 9, 1)
    write(follower, 0, 5, 1)
    leader.assign_leader_epoch(2)
    write(leader, 10, 11, 2)
    nc = await follow(leader, follower, 2)
    assert_agree(leader, follower)
    assert nc.epoch_queries == [1]


# ----------------------------------------------------------------- the leader's epoch entry


async def test_a_replica_elected_leader_records_its_epoch_before_appending(
    tmp_path: Path, clock: ManualClock, open_log: Callable[[str], PartitionLog]
) -> None:
    """The reviewer's case through PartitionReplica.apply_state: the new leader's epoch is in
    its cache at its LEO as soon as it leads, so the holder is cut to 10 before any append."""
    replica = PartitionReplica(
        spec=StreamSpec(name=STREAM, subject="s.in"),
        partition=PARTITION,
        directory=tmp_path / "candidate",
        config=NodeConfig(broker_id=LEADER, data_dir=str(tmp_path), log=LogConfig()),
        metrics=NodeMetrics(),
        intake=RecordingIntake(),
        leader_epoch=0,
        isr=[FOLLOWER],
        created_at_ms=clock.now_ms(),
        clock=clock,
    )
    await replica.open()
    try:
        write(replica.log, 0, 9, 3)
        write(replica.log, 10, 12, 5, "c")
        holder = open_log("holder")
        write(holder, 0, 9, 3)
        write(holder, 10, 30, 6, "h")
        holder.set_high_watermark(31)
        nc = LoopbackNats()
        state = PartitionState(
            leader=LEADER,
            leader_epoch=7,
            isr=(LEADER,),
            replicas=(LEADER, FOLLOWER),
            controller_epoch=1,
        )
        await replica.apply_state(state, 1, nc, False, "c")
        assert replica.log.epoch_entries == [(3, 0), (5, 10), (7, 13)]
        await follow(replica.log, holder, 7, nc)
        assert_agree(replica.log, holder)
    finally:
        await replica.close()


def test_a_leader_records_its_epoch_before_appending(
    open_log: Callable[[str], PartitionLog], tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log("leader")
    write(log, 0, 9, 5)
    log.assign_leader_epoch(7)
    assert log.epoch_entries == [(5, 0), (7, 10)]
    assert log.end_offset_for_epoch(6) == (5, 10)
    assert log.end_offset_for_epoch(7) == (7, 10)
    log.assign_leader_epoch(7)  # re-entering the same leadership changes nothing
    write(log, 10, 11, 7)
    assert log.epoch_entries == [(5, 0), (7, 10)]
    assert log.end_offset_for_epoch(7) == (7, 12)
    log.close()
    again = PartitionLog.open(tmp_path / "leader", LogConfig(), now_ms=clock.now_ms)
    assert again.epoch_entries == [(5, 0), (7, 10)]
    again.assign_leader_epoch(8)
    again.close()
    # an epoch entry with no records is dropped on reopen (the leader records it again)
    third = PartitionLog.open(tmp_path / "leader", LogConfig(), now_ms=clock.now_ms)
    assert third.epoch_entries == [(5, 0), (7, 10)]
    third.close()


# ----------------------------------------------------------------- a leader that lost its tail


async def test_a_follower_ahead_of_a_restarted_leader_truncates_again(
    open_log: Callable[[str], PartitionLog],
) -> None:
    """A leader that lost a torn last write serves the same epoch again (a restarted leader
    leads at a new epoch, see ``coordinator.isr.bump_epoch_after_restart``; this is the
    follower's own safeguard, as in Kafka). The follower, already fetching, is past the
    leader's LEO: its fetches are out of range. It asks about its epoch again and cuts its
    unacknowledged tail instead of waiting until the leader's new records pass its LEO and
    then keeping the old ones below the HW."""
    leader, follower = open_log("leader"), open_log("follower")
    write(leader, 0, 9, 0)
    nc = LoopbackNats()
    leader_side = LeaderSide(leader, 0)
    server = fetch_server(leader_side, nc)
    await server.start()
    fetcher = start_fetcher(follower, 0, nc)
    try:
        await eventually(lambda: follower.log_end_offset == 10, 3.0, "the follower caught up")
        leader.truncate_to(7)  # the torn write: 7..9 never reached the leader's disk
        await eventually(lambda: follower.log_end_offset == 7, 3.0, "the follower cut 7..9")
        write(leader, 7, 12, 0, "after-restart")
        await eventually(
            lambda: batches(follower) == batches(leader), 3.0, "the follower agrees again"
        )
    finally:
        await fetcher.stop()
        await server.stop()
        await asyncio.gather(*leader_side.tasks, return_exceptions=True)
    assert [value for _, _, value in batches(follower)][7:] == [
        value for _, _, value in batches(leader)
    ][7:]
