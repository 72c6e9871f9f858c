"""Fan-out: many readers waiting at a partition's HW, all woken by one publish.

Two kinds of reader, measured one after the other: raw REST long polls, and
``Client.subscribe`` iterators (all in this one process, as an application following a
partition many times over would run them). Every reader asks for the offset after the last
committed record with a long wait, so each one waits at the HW on the node. Once the node's
``liftlog_fetch_waiters`` shows them all waiting, one acks=all record is published; each
reader's wake-up is the time from that publish to the record reaching it. A node that wakes
its waiters one by one, or reads the log once per waiter, shows it in the tail of that
distribution; so does a client that cannot keep that many fetches waiting at once.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from liftlog.bench.consume.leader import leader_url
from liftlog.bench.consume.long_poll import LongPoll, PollAnswer
from liftlog.bench.errors import BenchError
from liftlog.bench.toolkit.json_object import JsonObject
from liftlog.bench.toolkit.node_probe import metric_total
from liftlog.bench.toolkit.stats import Latency
from spark_log.client import Client

DEFAULT_FANOUT = 1000
"""Long polls of a run's fan-out measurement (``liftlog bench --fanout``)."""
FANOUT_STREAM = "bench-fanout"
CLIENT_FANOUT_STREAM = "bench-fanout-clients"
WAKE_TIMEOUT_S = 60.0
POLL_WAIT_MS = 60_000
WAITING_TIMEOUT_S = 60.0
WAITING_POLL_S = 0.05
WAITERS_METRIC = "liftlog_fetch_waiters"


@dataclass(frozen=True)
class FanoutResult:
    pollers: int
    woken: int
    """Polls answered 200 with the published record."""
    wake: Latency
    """From the publish to each poll's answer."""

    def to_json(self) -> JsonObject:
        return {"pollers": self.pollers, "woken": self.woken, "wake": self.wake.to_json()}


async def _stream_with_one_record(client: Client, stream: str, subject: str) -> tuple[str, int]:
    """Create ``stream`` with one committed record: its leader's URL, and the offset every
    reader then waits for."""
    await client.create_stream(stream, subject)
    api_url = await leader_url(client, stream)
    first = await client.publish(stream, b"before", ack_policy="all")
    if first is None:
        raise BenchError("the first fan-out record was not acknowledged")
    return api_url, first.offset + 1


async def measure_fanout(client: Client, pollers: int) -> FanoutResult:
    """``pollers`` long polls on one partition's leader, woken by one acks=all publish."""
    api_url, waited = await _stream_with_one_record(
        client, FANOUT_STREAM, f"bench.fanout.{pollers}"
    )
    path = (
        f"/v1/streams/{FANOUT_STREAM}/partitions/0/records?offset={waited}&wait_ms={POLL_WAIT_MS}"
    )
    polls = [LongPoll(api_url, path) for _ in range(pollers)]
    await asyncio.gather(*(p.send() for p in polls))
    answers = [asyncio.ensure_future(p.answer()) for p in polls]
    try:
        await _all_waiting(api_url, pollers)
        published_at = time.perf_counter()
        await client.publish(FANOUT_STREAM, b"wake", ack_policy="all")
        done = await asyncio.gather(*answers)
    finally:
        for task in answers:
            task.cancel()
        await client.delete_stream(FANOUT_STREAM)
    return _result(pollers, done, published_at)


async def measure_client_fanout(client: Client, subscribers: int) -> FanoutResult:
    """``subscribers`` ``Client.subscribe`` iterators on one partition, woken by one publish."""
    stream = CLIENT_FANOUT_STREAM
    api_url, waited = await _stream_with_one_record(
        client, stream, f"bench.fanout.clients.{subscribers}"
    )
    arrived: list[float] = []

    async def follow() -> None:
        async for _record in client.subscribe(
            stream, start=waited, max_records=1, poll_wait_ms=POLL_WAIT_MS
        ):
            arrived.append(time.perf_counter())

    followers = [asyncio.ensure_future(follow()) for _ in range(subscribers)]
    try:
        await _all_waiting(api_url, subscribers)
        published_at = time.perf_counter()
        await client.publish(stream, b"wake", ack_policy="all")
        await asyncio.wait_for(asyncio.gather(*followers), WAKE_TIMEOUT_S)
    finally:
        for task in followers:
            task.cancel()
        await client.delete_stream(stream)
    wake = Latency.from_samples(
        [at - published_at for at in arrived], subscribers - len(arrived), 0
    )
    return FanoutResult(subscribers, len(arrived), wake)


async def _all_waiting(api_url: str, pollers: int) -> None:
    """Until the node counts every poll as waiting (none may still be on its way in)."""
    deadline = time.monotonic() + WAITING_TIMEOUT_S
    while True:
        waiting = await asyncio.to_thread(metric_total, api_url, WAITERS_METRIC)
        if waiting >= pollers:
            return
        if time.monotonic() > deadline:
            raise BenchError(f"only {waiting:.0f} of {pollers} long polls reached the node")
        await asyncio.sleep(WAITING_POLL_S)


def _result(pollers: int, answers: list[PollAnswer], published_at: float) -> FanoutResult:
    woken = [a for a in answers if a.status == 200 and a.body_bytes > 0]
    wake = Latency.from_samples(
        [a.answered_at - published_at for a in woken], pollers - len(woken), 0
    )
    return FanoutResult(pollers, len(woken), wake)
