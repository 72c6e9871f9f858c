"""Measurement 1: per-message acked throughput, one record per NATS message.

``records`` publishes with a fixed window of ``ack_window`` in flight, the same loop for each
side; throughput is acked records over the wall time of the whole window run.
"""

from __future__ import annotations

from collections.abc import Mapping

from liftlog.bench.publish.publishers import Publisher
from liftlog.bench.publish.settings import WARMUP_MESSAGES, BenchSettings
from liftlog.bench.publish.window import WindowOutcome, run_window
from liftlog.bench.toolkit.cpu import CpuMeter
from liftlog.bench.toolkit.deadline import within
from liftlog.bench.toolkit.progress import Progress
from liftlog.bench.toolkit.stats import Throughput


async def warm_up(publisher: Publisher, value: bytes, window: int) -> None:
    """A few acked publishes first: connections, caches and the leader's first cycle are not
    what the measurement is about."""
    await run_window(WARMUP_MESSAGES, window, lambda: publisher.publish(value), WindowOutcome())


async def measure_acked(
    publisher: Publisher,
    value: bytes,
    settings: BenchSettings,
    progress: Progress,
    pids: Mapping[str, int],
) -> Throughput:
    await warm_up(publisher, value, settings.ack_window)
    outcome = WindowOutcome()
    run = run_window(
        settings.records, settings.ack_window, lambda: publisher.publish(value), outcome
    )
    async with progress.ticking(
        f"{publisher.label} acked", lambda: outcome.acked, settings.records
    ):
        with CpuMeter(pids) as cpu:
            await within(settings.phase_timeout_s, f"{publisher.label} per-message acked", run)
    return Throughput(
        outcome.acked, len(value), outcome.seconds, outcome.failed, outcome.first_error, cpu.percent
    )
