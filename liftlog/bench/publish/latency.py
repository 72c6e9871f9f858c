"""Measurement 3: publish → ack latency at a fixed, moderate rate, paced by the wall clock.

Publishes start on schedule (``i / rate`` after the first) whether or not earlier ones were
acked, so a slow ack shows up as latency instead of silently lowering the rate.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

from liftlog.bench.publish.publishers import PUBLISH_ERRORS, Publisher
from liftlog.bench.publish.settings import BenchSettings
from liftlog.bench.toolkit.cpu import CpuMeter
from liftlog.bench.toolkit.deadline import within
from liftlog.bench.toolkit.stats import Latency

LATENCY_WARMUP_MESSAGES = 20


async def _paced(
    publisher: Publisher, value: bytes, count: int, rate_per_s: int
) -> tuple[list[float], int]:
    samples: list[float] = []
    failures = [0]
    tasks: set[asyncio.Task[None]] = set()

    async def one() -> None:
        started = time.perf_counter()
        try:
            await publisher.publish(value)
        except PUBLISH_ERRORS:
            failures[0] += 1
        else:
            samples.append(time.perf_counter() - started)

    t0 = time.perf_counter()
    for i in range(count):
        delay = t0 + i / rate_per_s - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        task = asyncio.create_task(one())
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    await asyncio.gather(*tasks)
    return samples, failures[0]


async def measure_latency(
    publisher: Publisher, value: bytes, settings: BenchSettings, pids: Mapping[str, int]
) -> Latency:
    rate = settings.latency_rate_per_s
    await _paced(publisher, value, LATENCY_WARMUP_MESSAGES, rate)
    with CpuMeter(pids) as cpu:
        samples, failed = await within(
            settings.phase_timeout_s,
            f"{publisher.label} latency",
            _paced(publisher, value, settings.latency_messages, rate),
        )
    return Latency.from_samples(samples, failed, rate, cpu.percent)
