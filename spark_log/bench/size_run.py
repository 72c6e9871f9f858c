"""All four measurements for one record size, Liftlog and JetStream side by side.

Sides run one after the other, never at once: on a 2-core machine each side gets the whole
machine while it is measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nats.js import JetStreamContext

from spark_log.bench.jetstream import create_js_stream
from spark_log.bench.measure_acked import measure_acked
from spark_log.bench.measure_batches import measure_batches
from spark_log.bench.measure_fire_forget import FireForgetTarget, measure_fire_forget
from spark_log.bench.measure_latency import measure_latency
from spark_log.bench.payload import payload, size_label
from spark_log.bench.progress import Progress
from spark_log.bench.publishers import JetStreamPublisher, LiftlogPublisher, Publisher
from spark_log.bench.results import JETSTREAM, JETSTREAM_SYNC, LIFTLOG, SizeResult
from spark_log.bench.settings import BenchSettings
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


async def publishers(sides: Sides, size: int) -> dict[str, Publisher]:
    """One stream per side and size, each on its own subject; returns their publishers."""
    stream = f"bench-{size}"
    await sides.client.create_stream(stream, f"bench.liftlog.{size}", ack_policy="all")
    found: dict[str, Publisher] = {LIFTLOG: LiftlogPublisher(sides.client, stream)}
    await create_js_stream(sides.js, f"BENCH_{size}", f"bench.js.{size}")
    found[JETSTREAM] = JetStreamPublisher(sides.js, f"bench.js.{size}", "JetStream")
    if sides.js_sync is not None:
        await create_js_stream(sides.js_sync, f"BENCH_SYNC_{size}", f"bench.jssync.{size}")
        found[JETSTREAM_SYNC] = JetStreamPublisher(
            sides.js_sync, f"bench.jssync.{size}", "JetStream sync=always"
        )
    return found


async def measure_size(
    sides: Sides, size: int, settings: BenchSettings, progress: Progress
) -> SizeResult:
    label = size_label(size)
    value = payload(size)
    pubs = await publishers(sides, size)

    per_message = {}
    for key, pub in pubs.items():
        progress.say(f"{label}: per-message acked, {pub.label}, {settings.records:,} records ...")
        per_message[key] = tp = await measure_acked(pub, value, settings, progress)
        progress.say(f"  {tp.records_per_s:,.0f} records/s, {tp.mb_per_s:.2f} MB/s"
                     f"{f', {tp.failed} failed' if tp.failed else ''}")

    progress.say(f"{label}: Liftlog producer batches ...")
    batches, per_batch = await measure_batches(
        sides.client, "bench-" + str(size), value, settings, sides.max_payload, progress
    )
    progress.say(f"  {batches.records_per_s:,.0f} records/s, {batches.mb_per_s:.2f} MB/s "
                 f"({per_batch} records per batch)")

    latency = {}
    for key, pub in pubs.items():
        progress.say(f"{label}: latency, {pub.label}, {settings.latency_messages:,} messages at "
                     f"{settings.latency_rate_per_s}/s ...")
        latency[key] = lat = await measure_latency(pub, value, settings)
        progress.say(f"  p50 {lat.p50_ms:.2f} ms, p99 {lat.p99_ms:.2f} ms, max {lat.max_ms:.2f} ms")

    progress.say(f"{label}: fire-and-forget, {settings.records:,} plain publishes beside a "
                 "bare subscriber ...")
    target = FireForgetTarget(sides.nats_url, sides.nats_monitor_url, sides.api_url,
                              f"bench-{size}", f"bench.liftlog.{size}", sides.log_dir)
    ff = await measure_fire_forget(target, value, settings, progress)
    progress.say(f"  Liftlog {ff.liftlog_records_per_s:,.0f} records/s, bare subscriber "
                 f"{ff.subscriber_records_per_s:,.0f} records/s, {ff.drops} dropped")
    return SizeResult(size, per_message, batches, per_batch, latency, ff)
