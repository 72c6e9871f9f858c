"""Measurement 4: recording plain NATS publishes, beside a bare subscriber of the same subject.

This is how existing applications publish: ``nc.publish`` with no reply and no Liftlog
client. The publisher pushes ``records`` messages at full speed (flushing every
``flush_every`` so they really leave the process) while a bare nats-py subscriber in its own
process counts the same traffic. Liftlog's rate is measured from the first publish to the HW
covering every message; the subscriber's from the first publish to its last message. Drops
are published minus recorded, cross-checked with the node's slow-consumer counter and the
server's slow-consumer count.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import nats

from liftlog.bench.errors import BenchError
from liftlog.bench.jetstream.server import varz
from liftlog.bench.publish.hw_watch import HwWatcher
from liftlog.bench.publish.settings import RECORDING_STALL_S, BenchSettings
from liftlog.bench.publish.subscriber_process import SubscriberCount, bare_subscriber
from liftlog.bench.toolkit.cpu import CpuMeter
from liftlog.bench.toolkit.deadline import within
from liftlog.bench.toolkit.json_object import JsonObject
from liftlog.bench.toolkit.node_probe import high_watermark, slow_consumer_drops
from liftlog.bench.toolkit.progress import Progress
from spark_log.client.rest import RestClient

WATCH_STEP_S = 0.05
SUBSCRIBER_CPU = "subscriber"
RESULT_GRACE_S = 15.0


@dataclass(frozen=True)
class FireForgetTarget:
    """Where the fire-and-forget traffic goes and how to observe the node recording it."""

    nats_url: str
    nats_monitor_url: str
    api_url: str
    stream: str
    subject: str
    log_dir: Path


@dataclass(frozen=True)
class FireForget:
    published: int
    record_bytes: int
    publish_seconds: float
    recorded: int
    liftlog_seconds: float
    subscriber_counted: int
    subscriber_seconds: float
    slow_consumer_drops: int
    server_slow_consumers: int
    subscriber_slow_consumer_errors: int
    cpu_percent: dict[str, float] = field(default_factory=dict)

    @property
    def drops(self) -> int:
        return self.published - self.recorded

    @property
    def liftlog_records_per_s(self) -> float:
        return self.recorded / self.liftlog_seconds if self.liftlog_seconds > 0 else 0.0

    @property
    def subscriber_records_per_s(self) -> float:
        if self.subscriber_seconds <= 0:
            return 0.0
        return self.subscriber_counted / self.subscriber_seconds

    @property
    def ratio(self) -> float:
        sub = self.subscriber_records_per_s
        return self.liftlog_records_per_s / sub if sub > 0 else 0.0

    def to_json(self) -> JsonObject:
        return {
            "published": self.published,
            "publisher_records_per_s": round(self.published / self.publish_seconds, 1)
            if self.publish_seconds > 0
            else 0.0,
            "recorded": self.recorded,
            "liftlog_seconds": round(self.liftlog_seconds, 4),
            "liftlog_records_per_s": round(self.liftlog_records_per_s, 1),
            "liftlog_mb_per_s": round(self.liftlog_records_per_s * self.record_bytes / 1e6, 3),
            "subscriber_counted": self.subscriber_counted,
            "subscriber_seconds": round(self.subscriber_seconds, 4),
            "subscriber_records_per_s": round(self.subscriber_records_per_s, 1),
            "ratio": round(self.ratio, 3),
            "drops": self.drops,
            "slow_consumer_drops": self.slow_consumer_drops,
            "server_slow_consumers": self.server_slow_consumers,
            "subscriber_slow_consumer_errors": self.subscriber_slow_consumer_errors,
            "cpu_percent": self.cpu_percent,
        }


async def publish_plain(
    nats_url: str, subject: str, value: bytes, count: int, flush_every: int
) -> float:
    """Plain ``nc.publish`` (no reply) at full speed; returns the monotonic start time."""
    nc = await nats.connect(nats_url, max_reconnect_attempts=0)
    try:
        started = time.monotonic()
        for i in range(1, count + 1):
            await nc.publish(subject, value)
            if i % flush_every == 0:
                await nc.flush()
        await nc.flush()
    finally:
        await nc.close()
    return started


async def wait_recorded(watcher: HwWatcher, deadline_s: float) -> None:
    """Until the HW covers everything, or stops moving for RECORDING_STALL_S (drops)."""
    end = time.monotonic() + deadline_s
    while watcher.reached_at is None and time.monotonic() < end:
        if time.monotonic() - watcher.changed_at > RECORDING_STALL_S:
            return
        await asyncio.sleep(WATCH_STEP_S)


async def measure_fire_forget(
    target: FireForgetTarget,
    value: bytes,
    settings: BenchSettings,
    progress: Progress,
    pids: Mapping[str, int],
) -> FireForget:
    rest = RestClient(target.api_url)
    count = settings.records
    hw0 = await asyncio.to_thread(high_watermark, rest, target.stream)
    drops0 = await asyncio.to_thread(slow_consumer_drops, target.api_url, target.stream)
    server0 = await asyncio.to_thread(_server_slow_consumers, target.nats_monitor_url)
    timeout = settings.phase_timeout_s
    async with bare_subscriber(
        target.nats_url, target.subject, count, timeout, target.log_dir / "bare-subscriber.log"
    ) as sub:
        with HwWatcher(rest, target.stream, hw0 + count) as watcher, CpuMeter(pids) as cpu:
            t0 = await within(
                timeout,
                "fire-and-forget publishing",
                publish_plain(target.nats_url, target.subject, value, count, settings.flush_every),
            )
            published_s = time.monotonic() - t0
            progress.say(
                f"  published {count:,} plain messages in {published_s:.2f}s; "
                "waiting for the HW to cover them"
            )
            await wait_recorded(watcher, timeout)
        counted = await sub.result(timeout + RESULT_GRACE_S)
    hw = watcher.hw
    recorded_at = watcher.reached_at or watcher.changed_at
    subscriber_s = _subscriber_seconds(counted, t0)
    cpu_percent = {**cpu.percent, SUBSCRIBER_CPU: round(100 * counted.cpu_s / subscriber_s, 1)}
    return FireForget(
        published=count,
        record_bytes=len(value),
        publish_seconds=published_s,
        recorded=max(0, hw - hw0),
        liftlog_seconds=recorded_at - t0,
        subscriber_counted=counted.count,
        subscriber_seconds=subscriber_s,
        slow_consumer_drops=await asyncio.to_thread(
            slow_consumer_drops, target.api_url, target.stream
        )
        - drops0,
        server_slow_consumers=await asyncio.to_thread(
            _server_slow_consumers, target.nats_monitor_url
        )
        - server0,
        subscriber_slow_consumer_errors=counted.slow_consumer_errors,
        cpu_percent=cpu_percent,
    )


def _subscriber_seconds(counted: SubscriberCount, t0: float) -> float:
    if counted.last_at is None:
        raise BenchError("the bare subscriber received nothing; is the subject right?")
    return counted.last_at - t0


def _server_slow_consumers(monitor_url: str) -> int:
    return int(varz(monitor_url).get("slow_consumers", 0))
