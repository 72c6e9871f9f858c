"""Publish → visible: how long a record takes from its publish to a subscribed consumer.

A ``Client.subscribe`` iterator follows the partition from its end while records are
published at the latency rate (``i / rate`` after the first, whatever the acks do), each
value starting with its sequence number. A record's figure runs from its publish call to the
iterator yielding it: the ack (``acks=all``: committed on every ISR replica) is not waited
for, since a consumer sees a record once it is committed, whether or not the producer has
heard so yet.
"""

from __future__ import annotations

import asyncio
import time

from liftlog.bench.errors import BenchError
from liftlog.bench.toolkit.stats import Latency
from spark_log.client import Client

SEQUENCE_BYTES = 8
FOLLOW_WAIT_MS = 1000
"""Each of the iterator's fetches waits at the partition's end this long."""
SEEN_POLL_S = 0.01
SETTLE_TIMEOUT_S = 30.0
"""How long after the last publish the iterator may take to see every record."""


async def measure_visibility(
    client: Client, stream: str, value: bytes, count: int, rate_per_s: int
) -> Latency:
    """``count`` records of ``stream`` (partition 0) at ``rate_per_s``, followed as they come."""
    start = (await client.fetch(stream, 0, start="new-only")).high_watermark
    padding = value[SEQUENCE_BYTES:]
    sent: dict[int, float] = {}
    seen: dict[int, float] = {}

    async def follow() -> None:
        async for record in client.subscribe(
            stream, 0, start=start, max_records=count, poll_wait_ms=FOLLOW_WAIT_MS
        ):
            seen[int.from_bytes(record.value[:SEQUENCE_BYTES], "big")] = time.perf_counter()

    follower = asyncio.ensure_future(follow())
    publishes: list[asyncio.Task[object]] = []
    try:
        t0 = time.perf_counter()
        for i in range(count):
            delay = t0 + i / rate_per_s - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            sent[i] = time.perf_counter()
            body = i.to_bytes(SEQUENCE_BYTES, "big") + padding
            publishes.append(asyncio.ensure_future(client.publish(stream, body, partition=0)))
        outcomes = await asyncio.gather(*publishes, return_exceptions=True)
        stored = count - sum(isinstance(o, BaseException) for o in outcomes)
        await _until_seen(seen, stored)
    finally:
        follower.cancel()
    samples = [seen[i] - at for i, at in sent.items() if i in seen]
    return Latency.from_samples(samples, count - len(samples), rate_per_s)


async def _until_seen(seen: dict[int, float], stored: int) -> None:
    """Until the iterator has yielded every record whose publish succeeded."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while len(seen) < stored:
        if time.monotonic() > deadline:
            raise BenchError(f"the subscriber saw {len(seen)} of {stored} stored records")
        await asyncio.sleep(SEEN_POLL_S)
