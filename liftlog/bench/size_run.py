"""All four measurements for one record size, Liftlog and JetStream side by side.

Sides run one after the other, never at once: on a 2-core machine each side gets the whole
machine while it is measured. The per-message acked runs alternate sides round by round, so
a burst of unrelated load on a shared machine hits both rather than one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from nats.js import JetStreamContext

from liftlog.bench.jetstream import create_js_stream
from liftlog.bench.measure_acked import measure_acked
from liftlog.bench.measure_batches import measure_batches
from liftlog.bench.measure_fire_forget import FireForgetTarget, measure_fire_forget
from liftlog.bench.measure_latency import measure_latency
from liftlog.bench.payload import payload, size_label
from liftlog.bench.progress import Progress
from liftlog.bench.publishers import JetStreamPublisher, LiftlogPublisher, Publisher
from liftlog.bench.results import JETSTREAM, JETSTREAM_SYNC, LIFTLOG, SizeResult
from liftlog.bench.settings import BenchSettings
from liftlog.bench.stats import Latency, Throughput
from spark_log.client import Client


@dataclass
class Sides:
    """Connections to everything under test, opened once for the whole run."""

    client: Client
    js: JetStreamContext
    js_sync: JetStreamContext | None
    nats_url: str
    nats_monitor_url: str
    api_url: str
    max_payload: int
    log_dir: Path
    # Processes whose CPU each measurement reports: publisher (this process), nats, node ...
    pids: Mapping[str, int] = field(default_factory=dict)


def liftlog_stream(size: int) -> tuple[str, str]:
    """(stream, subject) of the Liftlog stream for one record size."""
    return f"bench-{size}", f"bench.liftlog.{size}"


async def publishers(sides: Sides, size: int) -> dict[str, Publisher]:
    """One stream per side and size, each on its own subject; returns their publishers."""
    stream, subject = liftlog_stream(size)
    await sides.client.create_stream(stream, subject, ack_policy="all")
    found: dict[str, Publisher] = {LIFTLOG: LiftlogPublisher(sides.client, stream)}
    await create_js_stream(sides.js, f"BENCH_{size}", f"bench.js.{size}")
    found[JETSTREAM] = JetStreamPublisher(sides.js, f"bench.js.{size}", "JetStream")
    if sides.js_sync is not None:
        await create_js_stream(sides.js_sync, f"BENCH_SYNC_{size}", f"bench.jssync.{size}")
        found[JETSTREAM_SYNC] = JetStreamPublisher(
            sides.js_sync, f"bench.jssync.{size}", "JetStream sync=always"
        )
    return found


def median_round(rounds: list[Throughput]) -> Throughput:
    """The round with the median records/s (an observed run, not an average of runs)."""
    return sorted(rounds, key=lambda r: r.records_per_s)[len(rounds) // 2]


async def acked_rounds(
    pids: Mapping[str, int],
    pubs: Mapping[str, Publisher],
    value: bytes,
    settings: BenchSettings,
    progress: Progress,
) -> dict[str, list[Throughput]]:
    """Liftlog and JetStream alternating for ``acked_rounds``; sync=always once (it is slow).

    ``pids`` are the processes whose CPU each round reports.
    """
    label = size_label(len(value))
    rounds: dict[str, list[Throughput]] = {key: [] for key in pubs}
    for n in range(settings.acked_rounds):
        for key, pub in pubs.items():
            if key == JETSTREAM_SYNC and n > 0:
                continue
            progress.say(
                f"{label}: per-message acked, {pub.label}, round {n + 1}, "
                f"{settings.records:,} records ..."
            )
            tp = await measure_acked(pub, value, settings, progress, pids)
            rounds[key].append(tp)
            progress.say(
                f"  {tp.records_per_s:,.0f} records/s, {tp.mb_per_s:.2f} MB/s"
                f"{f', {tp.failed} failed' if tp.failed else ''}"
            )
    return rounds


async def latencies(
    pids: Mapping[str, int],
    pubs: Mapping[str, Publisher],
    value: bytes,
    settings: BenchSettings,
    progress: Progress,
) -> dict[str, Latency]:
    """Each side in turn at the same paced rate (never at once: they would share the cores)."""
    found = {}
    for key, pub in pubs.items():
        progress.say(
            f"{size_label(len(value))}: latency, {pub.label}, "
            f"{settings.latency_messages:,} messages at {settings.latency_rate_per_s}/s"
        )
        found[key] = lat = await measure_latency(pub, value, settings, pids)
        progress.say(f"  p50 {lat.p50_ms:.2f} ms, p99 {lat.p99_ms:.2f} ms, max {lat.max_ms:.2f} ms")
    return found


async def measure_size(
    sides: Sides, size: int, settings: BenchSettings, progress: Progress
) -> SizeResult:
    label = size_label(size)
    value = payload(size)
    stream, subject = liftlog_stream(size)
    pubs = await publishers(sides, size)

    rounds = await acked_rounds(sides.pids, pubs, value, settings, progress)

    progress.say(f"{label}: Liftlog producer batches, {settings.batch_total_records:,} records")
    batches, per_batch = await measure_batches(
        sides.client, stream, value, settings, sides.max_payload, progress, sides.pids
    )
    progress.say(
        f"  {batches.records_per_s:,.0f} records/s, {batches.mb_per_s:.2f} MB/s "
        f"({per_batch} records per batch)"
    )

    latency = await latencies(sides.pids, pubs, value, settings, progress)

    progress.say(
        f"{label}: fire-and-forget, {settings.records:,} plain publishes beside a "
        "bare subscriber ..."
    )
    target = FireForgetTarget(
        sides.nats_url, sides.nats_monitor_url, sides.api_url, stream, subject, sides.log_dir
    )
    ff = await measure_fire_forget(target, value, settings, progress, sides.pids)
    progress.say(
        f"  Liftlog {ff.liftlog_records_per_s:,.0f} records/s, bare subscriber "
        f"{ff.subscriber_records_per_s:,.0f} records/s, {ff.drops} dropped"
    )
    per_message = {key: median_round(r) for key, r in rounds.items()}
    return SizeResult(size, per_message, batches, per_batch, latency, ff, rounds)
