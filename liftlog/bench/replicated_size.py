"""The replicated measurements for one record size: Liftlog RF=3 beside JetStream R3.

The same loops as the single-node run (``acked_rounds``, ``measure_batches``, ``latencies``),
fed two different publishers: a Liftlog stream with three replicas and ``acks=all`` (acked
once the HW passed the record, i.e. every ISR member has it) and an R3 file-storage JetStream
stream (acked once a quorum stored it). Every acked record is counted, and afterwards held
against what each side stored, so a loss cannot hide behind a good rate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from nats.js import JetStreamContext

from liftlog.bench.js_cluster import CLUSTER_SIZE, create_r3_stream
from liftlog.bench.measure_batches import measure_batches
from liftlog.bench.payload import payload, size_label
from liftlog.bench.progress import Progress
from liftlog.bench.publishers import JetStreamPublisher, LiftlogPublisher, Publisher
from liftlog.bench.replica_check import (
    StoredCheck,
    js_leader,
    js_stored,
    liftlog_stored,
    node_name,
    wait_full_isr,
    wait_js_replicas_current,
)
from liftlog.bench.replicated_results import (
    JETSTREAM_R3,
    LIFTLOG_RF3,
    REPLICATED_TITLES,
    ReplicatedSizeResult,
)
from liftlog.bench.settings import REPLICATED_FACTOR, BenchSettings
from liftlog.bench.size_run import acked_rounds, latencies, median_round
from liftlog.bench.tally import AckTally, CountingBatchSender, CountingPublisher
from spark_log.client import Client


@dataclass
class ReplicatedSides:
    """Connections to both replicated sides, opened once for the whole run."""

    client: Client
    js: JetStreamContext
    max_payload: int
    # Processes whose CPU each measurement reports: publisher, NATS, every node and JS server.
    pids: Mapping[str, int]


def liftlog_rf3_stream(size: int) -> tuple[str, str]:
    """(stream, subject) of the Liftlog RF=3 stream for one record size."""
    return f"bench-rf3-{size}", f"bench.liftlog.rf3.{size}"


def jetstream_r3_stream(size: int) -> tuple[str, str]:
    """(stream, subject) of the JetStream R3 stream for one record size."""
    return f"BENCH_R3_{size}", f"bench.js.r3.{size}"


async def replicated_publishers(
    sides: ReplicatedSides, size: int, tally: AckTally, progress: Progress
) -> tuple[dict[str, Publisher], dict[str, str]]:
    """Both streams, created and fully replicated; their publishers (counting acked records
    into ``tally``) and leaders."""
    stream, subject = liftlog_rf3_stream(size)
    await sides.client.create_stream(
        stream, subject, replication_factor=REPLICATED_FACTOR, ack_policy="all"
    )
    part = await wait_full_isr(sides.client, stream, REPLICATED_FACTOR)
    js_name, js_subject = jetstream_r3_stream(size)
    await create_r3_stream(sides.js, js_name, js_subject)
    info = await wait_js_replicas_current(sides.js, js_name, CLUSTER_SIZE)
    leaders = {LIFTLOG_RF3: node_name(part.leader), JETSTREAM_R3: js_leader(info)}
    progress.say(
        f"{size_label(size)}: streams {stream} (leader {leaders[LIFTLOG_RF3]}, ISR "
        f"{part.isr}) and {js_name} (leader {leaders[JETSTREAM_R3]})"
    )
    pubs: dict[str, Publisher] = {
        LIFTLOG_RF3: CountingPublisher(
            LiftlogPublisher(sides.client, stream, REPLICATED_TITLES[LIFTLOG_RF3]),
            tally,
            LIFTLOG_RF3,
        ),
        JETSTREAM_R3: CountingPublisher(
            JetStreamPublisher(sides.js, js_subject, REPLICATED_TITLES[JETSTREAM_R3]),
            tally,
            JETSTREAM_R3,
        ),
    }
    return pubs, leaders


async def stored_checks(
    sides: ReplicatedSides, size: int, tally: AckTally, progress: Progress
) -> dict[str, StoredCheck]:
    """Each side's committed count and complete replicas against its acked count."""
    found = {
        LIFTLOG_RF3: await liftlog_stored(
            sides.client, liftlog_rf3_stream(size)[0], tally.acked(LIFTLOG_RF3)
        ),
        JETSTREAM_R3: await js_stored(
            sides.js, jetstream_r3_stream(size)[0], tally.acked(JETSTREAM_R3), CLUSTER_SIZE
        ),
    }
    for side, check in found.items():
        progress.say(
            f"  {REPLICATED_TITLES[side]}: {check.acked:,} acked, {check.stored:,} "
            f"stored, {check.lost} lost, {check.replicas_complete}/{check.replicas} "
            f"replicas complete, leader {check.leader}"
        )
    return found


async def measure_replicated_size(
    sides: ReplicatedSides, size: int, settings: BenchSettings, progress: Progress
) -> ReplicatedSizeResult:
    label = size_label(size)
    value = payload(size)
    tally = AckTally()  # one stream per side and size: count this size's records alone
    pubs, leaders = await replicated_publishers(sides, size, tally, progress)

    rounds = await acked_rounds(sides.pids, pubs, value, settings, progress)

    progress.say(
        f"{label}: Liftlog RF=3 producer batches, {settings.batch_total_records:,} records"
    )
    sender = CountingBatchSender(sides.client, tally, LIFTLOG_RF3)
    batches, per_batch = await measure_batches(
        sender,
        liftlog_rf3_stream(size)[0],
        value,
        settings,
        sides.max_payload,
        progress,
        sides.pids,
    )
    progress.say(
        f"  {batches.records_per_s:,.0f} records/s, {batches.mb_per_s:.2f} MB/s "
        f"({per_batch} records per batch)"
    )

    latency = await latencies(sides.pids, pubs, value, settings, progress)
    progress.say(f"{label}: checking what each side stored against what it acked ...")
    stored = await stored_checks(sides, size, tally, progress)
    per_message = {key: median_round(r) for key, r in rounds.items()}
    return ReplicatedSizeResult(
        size, per_message, rounds, batches, per_batch, latency, stored, leaders
    )
