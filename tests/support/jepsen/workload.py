"""Concurrent publishers that record every attempt: the load a Jepsen-style scenario runs.

Each publisher is one asyncio task doing one attempt at a time (so concurrency is bounded by
the number of publishers, which keeps two shared cores usable) with its own acks level, batch
size and msg-id choice, on the NATS URL it is given: a scenario puts a publisher on one side
of a partition by giving it that side's server. The workload never retries an attempt itself:
the client library's own retries (``spark_log.client.publish_retry``) are part of what is tested,
and an application retry would blur which duplicates the system made.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass

import nats.errors

from spark_log.api_models import Ack
from spark_log.client import Client
from spark_log.errors import LiftlogError, NoRespondersError, RequestTimeoutError, UnavailableError
from tests.support.jepsen.history import (
    ACKS_ALL,
    ACKS_LEADER,
    ACKS_NONE,
    FAILED,
    INDETERMINATE,
    OK,
    Attempt,
    History,
    record_id,
    record_payload,
)

DEFAULT_ATTEMPT_TIMEOUT_S = 10.0
DEFAULT_ACK_TIMEOUT_S = 2.0
DEFAULT_DELIVERY_TIMEOUT_S = 5.0
DEFAULT_THINK_TIME_S = 0.01
"""A pause between one publisher's attempts: it paces the load (acks=none publishes return
at once and would otherwise spin), it waits for no state."""
ATTEMPT_TIMEOUT_CODE = "attempt_timeout"
CANCELLED_CODE = "cancelled"
CONNECTION_CODE = "connection"


@dataclass(frozen=True, slots=True)
class PublisherSpec:
    """What one publisher does on every attempt."""

    worker: int
    nats_url: str
    acks: str = ACKS_ALL
    batch_size: int = 1
    """1 publishes with ``publish``; more with ``publish_batch`` (one ack for all)."""
    with_msg_id: bool = False
    partition: int | None = None
    """None lets the client choose (round robin)."""


def default_mix(nats_url: str, publishers: int = 6, first_worker: int = 0) -> list[PublisherSpec]:
    """``publishers`` specs cycling through acks all/leader/none, singles and batches of 3,
    with and without a msg id: every combination appears once ``publishers`` >= 12."""
    combos = itertools.cycle(
        itertools.product((ACKS_ALL, ACKS_LEADER, ACKS_NONE), (1, 3), (False, True))
    )
    return [
        PublisherSpec(first_worker + i, nats_url, acks, size, msg_id)
        for i, (acks, size, msg_id) in zip(range(publishers), combos, strict=False)
    ]


@dataclass(frozen=True, slots=True)
class AttemptResult:
    """How one attempt ended, before it is stamped into an Attempt."""

    outcome: str
    ack: Ack | None = None
    code: str | None = None
    message: str | None = None


def classify(exc: BaseException) -> AttemptResult:
    """An attempt's error as an outcome: no answer is indeterminate, an answer is failed."""
    if isinstance(exc, TimeoutError):
        return AttemptResult(INDETERMINATE, code=ATTEMPT_TIMEOUT_CODE, message=str(exc))
    if isinstance(exc, RequestTimeoutError):
        return AttemptResult(INDETERMINATE, code=exc.code, message=exc.message)
    if isinstance(exc, UnavailableError) and not isinstance(exc, NoRespondersError):
        return AttemptResult(INDETERMINATE, code=exc.code, message=exc.message)
    if isinstance(exc, LiftlogError):
        return AttemptResult(FAILED, code=exc.code, message=exc.message)
    return AttemptResult(
        INDETERMINATE, code=CONNECTION_CODE, message=f"{type(exc).__name__}: {exc}"
    )


class Workload:
    """``start()`` the publishers, await progress, ``stop()`` for the History."""

    def __init__(
        self,
        servers: str,
        stream: str,
        publishers: Sequence[PublisherSpec],
        *,
        attempt_timeout_s: float = DEFAULT_ATTEMPT_TIMEOUT_S,
        ack_timeout_s: float = DEFAULT_ACK_TIMEOUT_S,
        delivery_timeout_s: float | None = DEFAULT_DELIVERY_TIMEOUT_S,
        think_time_s: float = DEFAULT_THINK_TIME_S,
    ) -> None:
        self.servers, self.stream = servers, stream
        self.publishers = list(publishers)
        self.attempt_timeout_s = attempt_timeout_s
        self.think_time_s = think_time_s
        self.history = History()
        self.ack_timeout_s = ack_timeout_s
        self.delivery_timeout_s = delivery_timeout_s
        self._clients: dict[str, Client] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._warm_ups: dict[str, asyncio.Task[None]] = {}
        self._stopping = asyncio.Event()
        self._progress = asyncio.Condition()
        self.acked_records = 0
        """Records acknowledged so far (acks all/leader), every publisher together."""

    def _client(self, nats_url: str) -> Client:
        """One client per NATS URL, shared by the publishers on that server."""
        if nats_url not in self._clients:
            self._clients[nats_url] = Client(
                self.servers, nats_url, self.ack_timeout_s, self.delivery_timeout_s
            )
        return self._clients[nats_url]

    def start(self) -> Workload:
        if self._tasks:
            raise RuntimeError("workload already started")
        self._tasks = [asyncio.create_task(self._run(spec)) for spec in self.publishers]
        return self

    async def stop(self) -> History:
        """Let each publisher finish its attempt in flight (bounded by the attempt timeout),
        close the clients (flushing acks=none publishes), and return the history."""
        self._stopping.set()
        try:
            await asyncio.gather(*self._tasks)
        finally:
            for client in self._clients.values():
                with contextlib.suppress(LiftlogError, nats.errors.Error, OSError):
                    await client.close()
        return self.history

    async def wait_acked(self, more: int, timeout_s: float) -> int:
        """Until ``more`` records beyond those acked at the call are acknowledged; returns
        the new total (TimeoutError after ``timeout_s``). Woken by each ack, never polled."""
        target = self.acked_records + more
        async with asyncio.timeout(timeout_s), self._progress:
            await self._progress.wait_for(lambda: self.acked_records >= target)
        return self.acked_records

    async def _warm_up(self, nats_url: str) -> None:
        """Connect and learn the stream's spec before the first attempt, so a client's start
        is not recorded as latency or unavailability. Best effort: a server a scenario cut
        off fails here too, and the attempts then record what happens."""
        client = self._client(nats_url)
        with contextlib.suppress(LiftlogError, nats.errors.Error, OSError, TimeoutError):
            async with asyncio.timeout(self.attempt_timeout_s):
                await client.stream_spec(self.stream)
                await client.max_payload()

    def _warmed(self, nats_url: str) -> asyncio.Task[None]:
        """One warm-up per NATS URL, shared by the publishers on it."""
        if nats_url not in self._warm_ups:
            self._warm_ups[nats_url] = asyncio.create_task(self._warm_up(nats_url))
        return self._warm_ups[nats_url]

    async def _run(self, spec: PublisherSpec) -> None:
        await self._warmed(spec.nats_url)
        seq = itertools.count()
        while not self._stopping.is_set():
            rids = tuple(record_id(spec.worker, next(seq)) for _ in range(spec.batch_size))
            await self._attempt(spec, rids)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.think_time_s):
                    await self._stopping.wait()

    async def _attempt(self, spec: PublisherSpec, rids: tuple[str, ...]) -> None:
        """Publish once and record the outcome, whatever happens (cancellation included)."""
        attempt_id = self.history.next_id()
        start_mono, start_wall = time.monotonic(), time.time()
        result = AttemptResult(INDETERMINATE, code=CANCELLED_CODE)
        try:
            async with asyncio.timeout(self.attempt_timeout_s):
                ack = await self._publish(spec, rids, f"{self.stream}-a{attempt_id}")
            result = AttemptResult(OK, ack=ack)
        except Exception as exc:  # noqa: BLE001 - every failure is part of the history
            result = classify(exc)
        finally:
            self._record(spec, rids, attempt_id, start_mono, start_wall, result)
        if result.ack is not None:
            await self._acked(len(rids))

    async def _publish(self, spec: PublisherSpec, rids: tuple[str, ...], msg_id: str) -> Ack | None:
        client = self._client(spec.nats_url)
        mid = msg_id if spec.with_msg_id else None
        if spec.batch_size == 1:
            return await client.publish(
                self.stream, record_payload(rids[0]), partition=spec.partition,
                ack_policy=spec.acks, msg_id=mid,
            )  # fmt: skip
        return await client.publish_batch(
            self.stream, [record_payload(r) for r in rids], partition=spec.partition,
            ack_policy=spec.acks, msg_id=mid,
        )  # fmt: skip

    def _record(
        self,
        spec: PublisherSpec,
        rids: tuple[str, ...],
        attempt_id: int,
        start_mono: float,
        start_wall: float,
        result: AttemptResult,
    ) -> None:
        ack = result.ack
        self.history.append(
            Attempt(
                id=attempt_id,
                worker=spec.worker,
                acks=spec.acks,
                with_msg_id=spec.with_msg_id,
                record_ids=rids,
                nats_url=spec.nats_url,
                start_mono=start_mono,
                end_mono=time.monotonic(),
                start_wall=start_wall,
                end_wall=time.time(),
                outcome=result.outcome,
                partition=None if ack is None else ack.partition,
                offset=None if ack is None else ack.offset,
                duplicate=False if ack is None else ack.duplicate,
                error_code=result.code,
                error_message=result.message,
            )
        )

    async def _acked(self, count: int) -> None:
        async with self._progress:
            self.acked_records += count
            self._progress.notify_all()
