"""Fan-out: many REST long polls waiting at a partition's HW, all woken by one publish.

Every poll asks for the offset after the last committed record with a long wait, so each one
waits at the HW on the node. Once the node's ``liftlog_fetch_waiters`` shows them all
waiting, one acks=all record is published; each poll's wake-up is the time from that publish
to its answer arriving. A node that wakes its waiters one by one, or reads the log once per
waiter, shows it in the tail of that distribution.
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


async def measure_fanout(client: Client, pollers: int) -> FanoutResult:
    """``pollers`` long polls on one partition's leader, woken by one acks=all publish."""
    await client.create_stream(FANOUT_STREAM, f"bench.fanout.{pollers}")
    api_url = await leader_url(client, FANOUT_STREAM)
    first = await client.publish(FANOUT_STREAM, b"before", ack_policy="all")
    if first is None:
        raise BenchError("the first fan-out record was not acknowledged")
    path = (
        f"/v1/streams/{FANOUT_STREAM}/partitions/0/records"
        f"?offset={first.offset + 1}&wait_ms={POLL_WAIT_MS}"
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
