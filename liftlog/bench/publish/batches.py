"""Measurement 2: Liftlog producer batches (many records per NATS message, one ack each).

This is Liftlog's high-throughput path (Kafka's end-to-end batching); JetStream has no
equivalent in nats-py, so the figure is compared with JetStream's per-message throughput.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Protocol

from liftlog.bench.errors import BenchError
from liftlog.bench.publish.settings import ACK_TIMEOUT_S, BenchSettings
from liftlog.bench.publish.window import WindowOutcome, run_window
from liftlog.bench.toolkit.cpu import CpuMeter
from liftlog.bench.toolkit.deadline import within
from liftlog.bench.toolkit.progress import Progress
from liftlog.bench.toolkit.stats import Throughput
from spark_log.client.client import Ack, encode_producer_batch

SHRINK_FACTOR = 0.9


class BatchSender(Protocol):
    """What the batch run needs of a client: ``Client`` itself, or a wrapper that counts the
    acked records (the replicated run checks them against what each replica stored)."""

    async def publish_batch(
        self, stream: str, values: Iterable[bytes | str], *, timeout_s: float | None = None
    ) -> Ack | None: ...


def batch_records_that_fit(value: bytes, wanted: int, max_payload: int) -> int:
    """The largest batch up to ``wanted`` records whose Arrow payload fits one NATS message."""
    count = wanted
    while count > 1 and len(encode_producer_batch([value] * count)) > max_payload:
        count = int(count * SHRINK_FACTOR)
    return count


async def measure_batches(
    client: BatchSender,
    stream: str,
    value: bytes,
    settings: BenchSettings,
    max_payload: int,
    progress: Progress,
    pids: Mapping[str, int],
) -> tuple[Throughput, int]:
    """Returns the throughput and the records per batch actually used."""
    per_batch = batch_records_that_fit(value, settings.batch_records, max_payload)
    batches = max(1, math.ceil(settings.batch_total_records / per_batch))
    values = [value] * per_batch

    async def send() -> None:
        ack = await client.publish_batch(stream, values, timeout_s=ACK_TIMEOUT_S)
        if ack is None or ack.count != per_batch:
            raise BenchError(f"batch ack {ack} does not cover {per_batch} records")

    await send()  # warm-up
    outcome = WindowOutcome()
    run = run_window(batches, settings.batches_in_flight, send, outcome)
    async with progress.ticking(
        "Liftlog batches", lambda: outcome.acked * per_batch, batches * per_batch
    ):
        with CpuMeter(pids) as cpu:
            await within(settings.phase_timeout_s, "Liftlog producer batches", run)
    throughput = Throughput(
        outcome.acked * per_batch,
        len(value),
        outcome.seconds,
        outcome.failed * per_batch,
        outcome.first_error,
        cpu.percent,
    )
    return throughput, per_batch
