"""Every measurement for one record size, Liftlog and JetStream side by side.

Sides run one after the other, never at once: on a 2-core machine each side gets the whole
machine while it is measured. The per-message acked runs alternate sides round by round, so
a burst of unrelated load on a shared machine hits both rather than one. Every acked record
is counted, so a replicated run can hold it against what each side stored afterwards: a loss
cannot hide behind a good rate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from nats.js import JetStreamContext

from liftlog.bench.compare.lineup import Lineup
from liftlog.bench.compare.results import SizeResult
from liftlog.bench.compare.sides import Side
from liftlog.bench.consume.leader import leader_url
from liftlog.bench.consume.reads import (
    READ_ARROW,
    READ_CLIENT,
    READ_PULL,
    read_arrow,
    read_jetstream,
    read_with_client,
)
from liftlog.bench.consume.visible import measure_visibility
from liftlog.bench.jetstream.server import create_js_stream_when_ready
from liftlog.bench.publish.acked import measure_acked
from liftlog.bench.publish.batches import measure_batches
from liftlog.bench.publish.fire_forget import FireForget, FireForgetTarget, measure_fire_forget
from liftlog.bench.publish.latency import measure_latency
from liftlog.bench.publish.plain_request import PlainRequestPublisher, ReplyInbox
from liftlog.bench.publish.publishers import JetStreamPublisher, LiftlogPublisher, Publisher
from liftlog.bench.publish.replica_check import (
    StoredCheck,
    js_leader,
    js_stored,
    liftlog_stored,
    node_name,
    wait_full_isr,
    wait_js_replicas_current,
)
from liftlog.bench.publish.settings import BenchSettings
from liftlog.bench.publish.tally import AckTally, CountingBatchSender, CountingPublisher
from liftlog.bench.toolkit.payload import payload, size_label
from liftlog.bench.toolkit.progress import Progress
from liftlog.bench.toolkit.stats import Latency, Throughput
from spark_log.client import Client


@dataclass
class Connections:
    """Connections to everything under test, opened once for the whole run."""

    client: Client
    # One JetStream context per JetStream side whose server started, by side key.
    jetstreams: dict[str, JetStreamContext]
    nats_url: str
    nats_monitor_url: str
    # The first node's REST URL (fire-and-forget watches its HW).
    api_url: str
    max_payload: int
    log_dir: Path
    # Processes whose CPU each measurement reports: publisher (this process), NATS, nodes ...
    pids: Mapping[str, int]
    # A reply inbox on a plain nats-py connection per side, for the identical-request rounds.
    inboxes: Mapping[str, ReplyInbox]


@dataclass
class SizeRun:
    """One record size under way: where it publishes and what it counted as acked."""

    conns: Connections
    lineup: Lineup
    size: int
    settings: BenchSettings
    progress: Progress
    # One stream per side and size: this size's records are counted alone.
    tally: AckTally

    @property
    def label(self) -> str:
        return size_label(self.size)

    def sides(self) -> list[Side]:
        """Liftlog, then every JetStream side whose server started (the notes say why not)."""
        return [self.lineup.liftlog] + [
            s for s in self.lineup.jetstream if s.key in self.conns.jetstreams
        ]

    def stream(self, side: Side) -> str:
        return side.stream_for(self.size)[0]


async def measure_size(
    conns: Connections, lineup: Lineup, size: int, settings: BenchSettings, progress: Progress
) -> SizeResult:
    run = SizeRun(conns, lineup, size, settings, progress, AckTally())
    value = payload(size)
    pubs = await open_streams(run)
    leaders = await wait_in_sync(run) if lineup.replicated else {}
    rounds = await acked_rounds(run, pubs, value)
    plain = await acked_rounds(run, plain_publishers(run), value, "plain NATS request, ")
    batches, per_batch = await producer_batches(run, value)
    latency = await latencies(run, pubs, value)
    visible = await visibility(run, value)
    reads = await consumer_reads(run)
    result = SizeResult(
        size,
        lineup.liftlog.key,
        lineup.reference.key,
        {key: median_round(r) for key, r in rounds.items()},
        rounds,
        batches,
        per_batch,
        latency,
        leaders=leaders,
        reads=reads,
        plain={key: median_round(r) for key, r in plain.items()},
        plain_rounds=plain,
        visible=visible,
    )
    if lineup.replicated:
        progress.say(f"{run.label}: checking what each side stored against what it acked ...")
        result.stored = await stored_checks(run)
    else:
        result.fire_forget = await fire_and_forget(run, value)
    return result


async def consumer_reads(run: SizeRun) -> dict[str, Throughput]:
    """``records`` stored records read back: Liftlog through the client and as REST Arrow,
    the reference JetStream side through a pull consumer."""
    records, size, client = run.settings.records, run.size, run.conns.client
    stream = run.stream(run.lineup.liftlog)
    run.progress.say(f"{run.label}: reading {records:,} stored records back on each side ...")
    reads = {
        READ_CLIENT: await read_with_client(client, stream, records, size),
        READ_ARROW: await read_arrow(await leader_url(client, stream), stream, records, size),
    }
    reference = run.lineup.reference
    js = run.conns.jetstreams.get(reference.key)
    if js is not None:
        js_stream, subject = reference.stream_for(size)
        reads[READ_PULL] = await read_jetstream(js, js_stream, subject, records, size)
    return reads


async def open_streams(run: SizeRun) -> dict[str, Publisher]:
    """One stream per side and size, each on its own subject; their publishers, counting every
    acked record into the run's tally."""
    rf = run.lineup.replication_factor
    liftlog = run.lineup.liftlog
    stream, subject = liftlog.stream_for(run.size)
    client = run.conns.client
    await client.create_stream(stream, subject, replication_factor=rf, ack_policy="all")
    found: dict[str, Publisher] = {
        liftlog.key: LiftlogPublisher(client, stream, liftlog.title),
    }
    for side in run.sides()[1:]:
        js = run.conns.jetstreams[side.key]
        name, js_subject = side.stream_for(run.size)
        await create_js_stream_when_ready(js, name, js_subject, rf)
        found[side.key] = JetStreamPublisher(js, js_subject, side.title)
    return {key: CountingPublisher(pub, run.tally, key) for key, pub in found.items()}


def plain_publishers(run: SizeRun) -> dict[str, Publisher]:
    """Liftlog's stream and the reference JetStream stream through the same plain request
    code (``plain_request``), counting acked records like the clients' rounds."""
    compared = (run.lineup.liftlog, run.lineup.reference)
    found: dict[str, Publisher] = {}
    for side in run.sides():  # Liftlog and every JetStream side whose server started
        inbox = run.conns.inboxes.get(side.key)
        if side in compared and inbox is not None:
            subject = side.stream_for(run.size)[1]
            pub = PlainRequestPublisher(inbox, subject, f"{side.title} (plain request)")
            found[side.key] = CountingPublisher(pub, run.tally, side.key)
    return found


async def wait_in_sync(run: SizeRun) -> dict[str, str]:
    """Wait until every replica of each side's stream is in sync (so ``acks=all`` waits for
    all of them, and a JetStream stream just created is done electing); their leaders."""
    rf = run.lineup.replication_factor
    liftlog, *jetstream = run.sides()
    part = await wait_full_isr(run.conns.client, run.stream(liftlog), rf)
    leaders = {liftlog.key: node_name(part.leader)}
    described = [f"{run.stream(liftlog)} (leader {leaders[liftlog.key]}, ISR {part.isr})"]
    for side in jetstream:
        info = await wait_js_replicas_current(run.conns.jetstreams[side.key], run.stream(side), rf)
        leaders[side.key] = js_leader(info)
        described.append(f"{run.stream(side)} (leader {leaders[side.key]})")
    run.progress.say(f"{run.label}: streams {' and '.join(described)}")
    return leaders


def median_round(rounds: list[Throughput]) -> Throughput:
    """The round with the median records/s (an observed run, not an average of runs)."""
    return sorted(rounds, key=lambda r: r.records_per_s)[len(rounds) // 2]


async def acked_rounds(
    run: SizeRun, pubs: Mapping[str, Publisher], value: bytes, how: str = ""
) -> dict[str, list[Throughput]]:
    """Every side in turn for ``acked_rounds`` rounds (a ``one_round`` side in the first only)."""
    settings, progress = run.settings, run.progress
    once = {side.key for side in run.lineup.sides if side.one_round}
    rounds: dict[str, list[Throughput]] = {key: [] for key in pubs}
    for n in range(settings.acked_rounds):
        for key, pub in pubs.items():
            if key in once and n > 0:
                continue
            progress.say(
                f"{run.label}: per-message acked, {how}{pub.label}, round {n + 1}, "
                f"{settings.records:,} records ..."
            )
            tp = await measure_acked(pub, value, settings, progress, run.conns.pids)
            rounds[key].append(tp)
            progress.say(
                f"  {tp.records_per_s:,.0f} records/s, {tp.mb_per_s:.2f} MB/s"
                f"{f', {tp.failed} failed' if tp.failed else ''}"
            )
    return rounds


async def producer_batches(run: SizeRun, value: bytes) -> tuple[Throughput, int]:
    """Liftlog's producer batches (JetStream has no such path in nats-py)."""
    side, settings, progress = run.lineup.liftlog, run.settings, run.progress
    progress.say(
        f"{run.label}: {side.title} producer batches, {settings.batch_total_records:,} records"
    )
    sender = CountingBatchSender(run.conns.client, run.tally, side.key)
    batches, per_batch = await measure_batches(
        sender,
        run.stream(side),
        value,
        settings,
        run.conns.max_payload,
        progress,
        run.conns.pids,
    )
    progress.say(
        f"  {batches.records_per_s:,.0f} records/s, {batches.mb_per_s:.2f} MB/s "
        f"({per_batch} records per batch)"
    )
    return batches, per_batch


async def latencies(
    run: SizeRun, pubs: Mapping[str, Publisher], value: bytes
) -> dict[str, Latency]:
    """Each side in turn at the same paced rate (never at once: they would share the cores)."""
    settings, progress = run.settings, run.progress
    found = {}
    for key, pub in pubs.items():
        progress.say(
            f"{run.label}: latency, {pub.label}, "
            f"{settings.latency_messages:,} messages at {settings.latency_rate_per_s}/s"
        )
        found[key] = lat = await measure_latency(pub, value, settings, run.conns.pids)
        progress.say(f"  p50 {lat.p50_ms:.2f} ms, p99 {lat.p99_ms:.2f} ms, max {lat.max_ms:.2f} ms")
    return found


async def visibility(run: SizeRun, value: bytes) -> Latency:
    """Publish → visible to a ``Client.subscribe`` iterator, at the latency rate."""
    settings, progress = run.settings, run.progress
    stream = run.stream(run.lineup.liftlog)
    progress.say(
        f"{run.label}: publish -> visible to a subscriber, {run.lineup.liftlog.title}, "
        f"{settings.latency_messages:,} records at {settings.latency_rate_per_s}/s"
    )
    found = await measure_visibility(
        run.conns.client, stream, value, settings.latency_messages, settings.latency_rate_per_s
    )
    progress.say(f"  p50 {found.p50_ms:.2f} ms, p99 {found.p99_ms:.2f} ms")
    return found


async def fire_and_forget(run: SizeRun, value: bytes) -> FireForget:
    """Plain publishes recorded by the single node, beside a bare subscriber of the subject."""
    conns, settings, progress = run.conns, run.settings, run.progress
    stream, subject = run.lineup.liftlog.stream_for(run.size)
    progress.say(
        f"{run.label}: fire-and-forget, {settings.records:,} plain publishes beside a "
        "bare subscriber ..."
    )
    target = FireForgetTarget(
        conns.nats_url, conns.nats_monitor_url, conns.api_url, stream, subject, conns.log_dir
    )
    ff = await measure_fire_forget(target, value, settings, progress, conns.pids)
    progress.say(
        f"  Liftlog {ff.liftlog_records_per_s:,.0f} records/s, bare subscriber "
        f"{ff.subscriber_records_per_s:,.0f} records/s, {ff.drops} dropped"
    )
    return ff


async def stored_checks(run: SizeRun) -> dict[str, StoredCheck]:
    """Each side's committed count and complete replicas against its acked count."""
    rf = run.lineup.replication_factor
    liftlog, *jetstream = run.sides()
    found = {
        liftlog.key: await liftlog_stored(
            run.conns.client, run.stream(liftlog), run.tally.acked(liftlog.key)
        )
    }
    for side in jetstream:
        found[side.key] = await js_stored(
            run.conns.jetstreams[side.key], run.stream(side), run.tally.acked(side.key), rf
        )
    for side in (liftlog, *jetstream):
        check = found[side.key]
        run.progress.say(
            f"  {side.title}: {check.acked:,} acked, {check.stored:,} "
            f"stored, {check.lost} lost, {check.replicas_complete}/{check.replicas} "
            f"replicas complete, leader {check.leader}"
        )
    return found
