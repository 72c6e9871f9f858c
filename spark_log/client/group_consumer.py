"""``Client.consume``: a member of a consumer group, read with ``async for``.

One heartbeat task keeps the session and takes the coordinator's assignment; one fetch task
per assigned partition long-polls the partition leader (``Client.fetch``) into a bounded
queue the iterator reads. Delivery is at least once: a record counts as processed when the
iterator is asked for the next one (or ``commit()`` is called while it is in hand), and only
processed offsets are committed. A partition given up in a rebalance is committed before the
coordinator is told, so its next owner starts right after the last record processed here.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from spark_log.api_models import MemberAssignment
from spark_log.client.fetched import Fetched
from spark_log.client.group_protocol import GroupProtocol
from spark_log.client.group_session import (
    OffsetBook,
    StreamPartition,
    backoff_s,
    check_offset_reset,
    diff_assignment,
    owned_wire,
    retriable,
    start_position,
)
from spark_log.client.positions import Start
from spark_log.client.rest import RestClient
from spark_log.errors import (
    FencedMemberError,
    InvalidRequestError,
    LiftlogError,
    OffsetOutOfRangeError,
    StaleMemberEpochError,
)
from spark_log.log.records import Header

log = logging.getLogger("liftlog.group")
T = TypeVar("T")

RebalanceCallback = Callable[[list[StreamPartition]], Awaitable[None] | None]
DEFAULT_GROUP_FETCH_RECORDS = 500
DEFAULT_GROUP_WAIT_MS = 500
MAX_PROCESSING_S = 300.0
"""How long a revocation waits for the record in hand (Kafka's ``max.poll.interval.ms``)."""


def default_client_id() -> str:
    """A member's client id when none is given: which machine and process it is."""
    return f"liftlog-{socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True, slots=True)
class GroupRecord:
    """A record with the partition it came from."""

    stream: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes
    headers: list[Header]
    subject: str
    decoded: object = None
    """The value decoded by its schema when the consumer decodes (``decode=True``; see
    ``Client.decode_value``), else None."""

    @property
    def stream_partition(self) -> StreamPartition:
        return StreamPartition(self.stream, self.partition)


@dataclass(frozen=True, slots=True)
class _Queued:
    record: GroupRecord
    incarnation: int


class GroupReads(Protocol):
    """What a group member needs of its client (``Client`` is one): the REST transport for
    the group protocol, fetches from partition leaders and the offset a start names."""

    rest: RestClient

    async def fetch(
        self, stream: str, partition: int = 0, offset: int | None = None, *,
        max_records: int = ..., wait_ms: int = 0,
    ) -> Fetched: ...  # fmt: skip

    async def start_offset(self, stream: str, partition: int, start: Start) -> int: ...

    async def decode_value(self, stream: str, value: bytes) -> object: ...

    def forget_stream(self, stream: str) -> None: ...


class GroupConsumer:
    """A group member. ``async with client.consume(...) as consumer: async for r in consumer``."""

    def __init__(
        self,
        client: GroupReads,
        group: str,
        streams: Iterable[str],
        *,
        auto_commit: bool = True,
        auto_commit_interval_s: float = 5.0,
        auto_offset_reset: str = "latest",
        session_timeout_ms: int | None = None,
        instance_id: str | None = None,
        on_assign: RebalanceCallback | None = None,
        on_revoke: RebalanceCallback | None = None,
        max_records: int = DEFAULT_GROUP_FETCH_RECORDS,
        wait_ms: int = DEFAULT_GROUP_WAIT_MS,
        client_id: str | None = None,
        decode: bool = False,
    ) -> None:
        """``client_id``: the name ``group describe`` shows beside the member (Kafka's
        ``client.id``; default ``liftlog-<hostname>-<pid>``). ``decode``: each record's
        ``decoded`` holds its value decoded by its schema."""
        self.streams = sorted(set(streams))
        if not self.streams:
            raise InvalidRequestError("consume needs at least one stream")
        if auto_commit_interval_s <= 0 or max_records < 1 or wait_ms < 0:
            raise InvalidRequestError(
                "auto_commit_interval_s must be > 0, max_records >= 1 and wait_ms >= 0"
            )
        self.group = group
        self._client = client
        self._reset = check_offset_reset(auto_offset_reset)
        self._auto_commit = auto_commit
        self._commit_interval_s = auto_commit_interval_s
        self._session_timeout_ms = session_timeout_ms
        self._instance_id = instance_id
        self.client_id = client_id or default_client_id()
        self._on_assign = on_assign
        self._on_revoke = on_revoke
        self._max_records = max_records
        self._wait_ms = wait_ms
        self._decode = decode
        self._protocol = GroupProtocol(client.rest, group)
        self.member_id: str | None = None
        self.member_epoch = 0
        self._heartbeat_s = 1.0
        self._session_s = 45.0
        self._book = OffsetBook()
        self._active: dict[StreamPartition, asyncio.Task[None]] = {}
        self._revoking: set[StreamPartition] = set()
        self._incarnation: dict[StreamPartition, int] = {}
        self._next_incarnation = 0
        self._queue: asyncio.Queue[_Queued | None] = asyncio.Queue(max_records)
        self._in_hand: _Queued | None = None
        self._released = asyncio.Event()
        self._beat_now = asyncio.Event()
        self._beat_lock = asyncio.Lock()
        self._commit_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        self._failure: BaseException | None = None
        self._started = False
        self._closed = False

    # ------------------------------------------------------------------ public

    @property
    def assignment(self) -> list[StreamPartition]:
        """The partitions this member consumes now."""
        return sorted(self._active)

    async def start(self) -> GroupConsumer:
        """Join the group and start consuming (``async with`` and ``async for`` call it)."""
        if self._closed:
            raise InvalidRequestError(f"the consumer of group {self.group} is closed")
        if not self._started:
            self._started = True
            await self._join()
            self._spawn(self._heartbeat_loop())
            if self._auto_commit:
                self._spawn(self._auto_commit_loop())
        return self

    async def __aenter__(self) -> GroupConsumer:
        return await self.start()

    async def __aexit__(self, exc_type: object, *_rest: object) -> None:
        # leaving the block by an exception: the record in hand was not processed
        await self.close(processed=exc_type is None)

    def __aiter__(self) -> GroupConsumer:
        return self

    async def __anext__(self) -> GroupRecord:
        if self._closed:
            raise StopAsyncIteration
        await self.start()
        self._release()
        while True:
            if self._failure is not None:
                raise self._failure
            item = await self._queue.get()
            if item is None:
                self._queue.put_nowait(None)  # every later call ends too
                if self._failure is not None:
                    raise self._failure
                raise StopAsyncIteration
            tp = item.record.stream_partition
            if self._incarnation.get(tp) == item.incarnation and tp in self._active:
                self._in_hand = item
                self._released.clear()
                return item.record

    async def commit(
        self, offsets: Mapping[tuple[str, int], int] | None = None
    ) -> dict[StreamPartition, int]:
        """Commit every record yielded so far, the one in hand included (call it after
        processing), or ``offsets``: ``{(stream, partition): last offset processed}``.
        Partitions this member no longer holds are left out; returns what was committed."""
        if offsets is None:
            self._release()
            return await self._commit(self._held())
        wanted = {StreamPartition(s, p): o for (s, p), o in offsets.items()}
        held = set(self._held())
        return await self._commit_offsets({tp: o for tp, o in wanted.items() if tp in held})

    async def close(self, *, processed: bool = True) -> None:
        """Give up every partition (``on_revoke``), commit (with auto-commit), leave the group
        and stop every task. ``processed``: the record in hand counts as processed."""
        if self._closed:
            return
        self._closed = True
        if processed:
            self._release()
        try:
            tasks = list(self._tasks) + list(self._active.values())
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            held = self._held()
            if held and self.member_id is not None and self._failure is None:
                await self._call_back(self._on_revoke, held)
                if self._auto_commit:
                    await self._commit_quietly(held)
            if self.member_id is not None:
                with contextlib.suppress(LiftlogError):
                    await self._protocol.leave(self.member_id)
        finally:
            self._active.clear()
            self._revoking.clear()
            self._end_iteration()
            self._protocol.close()

    # ------------------------------------------------------------------ membership

    async def _join(self) -> None:
        answer: MemberAssignment = await self._retrying(
            lambda: self._protocol.join(
                self.streams, self._instance_id, self._session_timeout_ms, self.client_id
            )
        )
        self.member_id = answer.member_id
        log.info("member %s joined group %s", self.member_id, self.group)
        await self._apply(answer)

    async def _heartbeat_loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._beat_now.wait(), self._heartbeat_s)
            self._beat_now.clear()
            await self._beat()

    async def _beat(self) -> None:
        """One heartbeat, retried through a coordinator change until the session would end;
        a fenced member (or one whose session surely ended) drops everything and rejoins."""
        async with self._beat_lock:
            loop = asyncio.get_running_loop()
            give_up = loop.time() + self._session_s
            attempt = 0
            while True:
                if self.member_id is None:
                    await self._join()
                    return
                owned = owned_wire(self._active, self._revoking)
                try:
                    answer = await self._protocol.heartbeat(
                        self.member_id, self.member_epoch, owned, self._session_s / 2
                    )
                except FencedMemberError:
                    await self._lose_all()
                    continue
                except LiftlogError as exc:
                    if not retriable(exc):
                        raise
                    if loop.time() >= give_up:
                        await self._lose_all()
                        continue
                    await asyncio.sleep(backoff_s(attempt))
                    attempt += 1
                    continue
                await self._apply(answer)
                return

    async def _apply(self, answer: MemberAssignment) -> None:
        self.member_epoch = answer.member_epoch
        self._heartbeat_s = max(0.01, answer.heartbeat_interval_ms / 1000)
        self._session_s = answer.session_timeout_ms / 1000
        if self._closed:  # a commit on close heartbeated: take the epoch, start nothing
            return
        change = diff_assignment(self._active, self._revoking, answer.assigned)
        if change.revoked:
            for tp in change.revoked:
                self._stop_fetching(tp)
                self._revoking.add(tp)
            self._drop_queued(set(change.revoked))
            self._spawn(self._revoke(change.revoked))
        if change.added:
            await self._assign(change.added)

    async def _assign(self, added: list[StreamPartition]) -> None:
        await self._call_back(self._on_assign, added)
        committed: dict[StreamPartition, int | None] = {}
        for stream in sorted({tp.stream for tp in added}):
            call = functools.partial(self._protocol.committed, stream)
            committed.update(await self._retrying(call))
        for tp in added:
            self._book.start(tp, committed.get(tp))
            self._next_incarnation += 1
            self._incarnation[tp] = self._next_incarnation
            self._active[tp] = self._watch(self._fetch_loop(tp, self._next_incarnation))
        log.info("member %s of %s assigned %s", self.member_id, self.group, added)

    async def _revoke(self, partitions: list[StreamPartition]) -> None:
        """Give partitions up: let the record in hand finish, tell the app, commit, then ack
        (the next heartbeat, sent at once, no longer owns them)."""
        in_hand = self._in_hand
        if in_hand is not None and in_hand.record.stream_partition in partitions:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._released.wait(), MAX_PROCESSING_S)
        await self._call_back(self._on_revoke, partitions)
        await self._commit_quietly(partitions)
        self._revoking.difference_update(partitions)
        self._book.forget(partitions)
        self._beat_now.set()
        log.info("member %s of %s revoked %s", self.member_id, self.group, partitions)

    async def _lose_all(self) -> None:
        """Fenced: every partition is someone else's now; nothing may be committed."""
        lost = self._held()
        for tp in lost:
            self._stop_fetching(tp)
        self._revoking.clear()
        self._drop_queued(set(lost))
        self._book.forget(lost)
        log.warning("member %s of group %s was fenced: rejoining", self.member_id, self.group)
        self.member_id = None
        self.member_epoch = 0
        if lost:
            await self._call_back(self._on_revoke, lost)

    # ------------------------------------------------------------------ commits

    async def _auto_commit_loop(self) -> None:
        while True:
            await asyncio.sleep(self._commit_interval_s)
            await self._commit_quietly(self._held())

    async def _commit_quietly(self, partitions: Iterable[StreamPartition]) -> None:
        try:
            await self._commit(partitions)
        except LiftlogError as exc:
            log.warning("commit of group %s failed: %s", self.group, exc)

    async def _commit(self, partitions: Iterable[StreamPartition]) -> dict[StreamPartition, int]:
        return await self._commit_offsets(self._book.to_commit(partitions))

    async def _commit_offsets(
        self, offsets: dict[StreamPartition, int]
    ) -> dict[StreamPartition, int]:
        """Commit with the member's id and epoch; a stale epoch heartbeats and retries once
        with what is still held."""
        async with self._commit_lock:
            for retry in (False, True):
                held = set(self._held())
                offsets = {tp: o for tp, o in offsets.items() if tp in held}
                if not offsets or self.member_id is None:
                    return {}
                member_id, epoch = self.member_id, self.member_epoch
                try:
                    call = functools.partial(self._protocol.commit, member_id, epoch, offsets)
                    await self._retrying(call)
                except StaleMemberEpochError:
                    if retry:
                        raise
                    await self._beat()
                    continue
                except FencedMemberError:
                    self._beat_now.set()
                    raise
                self._book.mark_committed(offsets)
                return offsets
        return {}

    # ------------------------------------------------------------------ fetching

    async def _fetch_loop(self, tp: StreamPartition, incarnation: int) -> None:
        """Long-poll one partition from its position into the queue, until cancelled."""
        position = await self._position(tp, self._book.committed.get(tp))
        attempt = 0
        while True:
            try:
                fetched = await self._client.fetch(
                    tp.stream,
                    tp.partition,
                    position,
                    max_records=self._max_records,
                    wait_ms=self._wait_ms,
                )
            except OffsetOutOfRangeError:
                # retention removed the position: ``auto_offset_reset`` decides
                position = await self._position(tp, None)
                continue
            except LiftlogError as exc:
                if not retriable(exc):
                    raise
                self._client.forget_stream(tp.stream)  # the leader may have moved
                await asyncio.sleep(backoff_s(attempt))
                attempt += 1
                continue
            attempt = 0
            for r in fetched.records:
                decoded = None
                if self._decode:
                    decoded = await self._client.decode_value(tp.stream, r.value)
                record = GroupRecord(
                    tp.stream, tp.partition, r.offset, r.timestamp, r.key, r.value,
                    r.headers, r.subject, decoded,
                )  # fmt: skip
                await self._queue.put(_Queued(record, incarnation))
            position = fetched.next_offset

    async def _position(self, tp: StreamPartition, committed: int | None) -> int:
        start = start_position(tp, committed, self._reset)
        if isinstance(start, int):
            return start
        offset: int = await self._retrying(
            lambda: self._client.start_offset(tp.stream, tp.partition, start)
        )
        return offset

    # ------------------------------------------------------------------ plumbing

    def _held(self) -> list[StreamPartition]:
        return sorted(set(self._active) | self._revoking)

    def _release(self) -> None:
        """The record in hand is processed: the iterator moved on, or the app committed."""
        item = self._in_hand
        if item is None:
            return
        self._in_hand = None
        tp = item.record.stream_partition
        if self._incarnation.get(tp) == item.incarnation:
            self._book.process(tp, item.record.offset)
        self._released.set()

    def _stop_fetching(self, tp: StreamPartition) -> None:
        task = self._active.pop(tp, None)
        if task is not None:
            task.cancel()

    def _drop_queued(self, partitions: set[StreamPartition]) -> None:
        kept: list[_Queued | None] = []
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if item is None or item.record.stream_partition not in partitions:
                kept.append(item)
        for item in kept:
            self._queue.put_nowait(item)

    def _fail(self, exc: BaseException) -> None:
        """A task met an error it cannot handle: the iterator raises it."""
        if self._failure is None:
            self._failure = exc
            log.error("consumer of group %s failed: %s", self.group, exc)
        for task in self._active.values():
            task.cancel()
        self._end_iteration()

    def _end_iteration(self) -> None:
        while not self._queue.empty():
            self._queue.get_nowait()
        self._queue.put_nowait(None)

    # asyncio types a coroutine's yield and send values as Any
    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = self._watch(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _watch(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """A task whose failure ends the iteration with its error (none fails silently)."""
        task = asyncio.create_task(coro)

        def done(finished: asyncio.Task[None]) -> None:
            if not finished.cancelled() and finished.exception() is not None:
                self._fail(finished.exception() or LiftlogError("task failed"))

        task.add_done_callback(done)
        return task

    async def _retrying(self, call: Callable[[], Awaitable[T]]) -> T:
        """``call`` retried on coordinator or leader changes, for one session timeout."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + self._session_s
        attempt = 0
        while True:
            try:
                return await call()
            except LiftlogError as exc:
                if not retriable(exc) or loop.time() >= give_up:
                    raise
            await asyncio.sleep(backoff_s(attempt))
            attempt += 1

    async def _call_back(
        self, callback: RebalanceCallback | None, partitions: list[StreamPartition]
    ) -> None:
        if callback is None:
            return
        result = callback(list(partitions))
        if inspect.isawaitable(result):
            await result
