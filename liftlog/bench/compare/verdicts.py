"""The targets the figures are held against, checked in one place (printed, never asserted).

Every run: Liftlog's per-message acked rate at least JetStream's, and producer batches at least
ten times it. One node adds the fire-and-forget targets; a replicated run reports p99 latency
(no threshold) and holds that no acked record is missing from any replica.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from liftlog.bench.compare.lineup import Lineup
from liftlog.bench.compare.results import BenchResult, SizeResult
from liftlog.bench.consume.fanout import FanoutResult
from liftlog.bench.consume.reads import READ_ARROW, READ_CLIENT, READ_PULL, READ_TITLES
from liftlog.bench.publish.fire_forget import FireForget
from liftlog.bench.toolkit.json_object import JsonObject
from liftlog.bench.toolkit.payload import size_label

PER_MESSAGE_TARGET_RATIO = 1.0
BATCH_TARGET_RATIO = 10.0
FIRE_FORGET_TARGET_RATIO = 0.5
RSS_TARGET_MB = 300.0
READ_TARGET_RATIO = 1.0
FANOUT_TARGET_P99_MS = 100.0
VISIBLE_TARGET_P99_MS_RF3 = 5.0


@dataclass(frozen=True)
class Verdict:
    target: str
    record_size: str | None
    value: str
    met: bool

    def to_json(self) -> JsonObject:
        return asdict(self)


def verdicts(result: BenchResult, lineup: Lineup) -> list[Verdict]:
    found: list[Verdict] = []
    for size in result.sizes:
        found += _acked_verdicts(size, lineup)
        if size.fire_forget is not None:
            found += _fire_forget_verdicts(size.fire_forget, size_label(size.record_bytes))
        if size.stored:
            found += _replica_verdicts(size, lineup)
        found += _read_verdicts(size)
    for readers, fanout in (
        ("REST long polls", result.fanout),
        ("client subscriptions", result.fanout_clients),
    ):
        if fanout is not None:
            found.append(_fanout_verdict(readers, fanout))
    if result.node_peak_rss_mb:
        peak = max(result.node_peak_rss_mb.values())
        nodes = len(result.node_peak_rss_mb)
        of = f" (largest of {nodes})" if nodes > 1 else ""
        found.append(
            Verdict(f"node peak RSS < 300 MB{of}", None, f"{peak:.0f} MB", peak < RSS_TARGET_MB)
        )
    return found


def _acked_verdicts(size: SizeResult, lineup: Lineup) -> list[Verdict]:
    label = size_label(size.record_bytes)
    ours = f"RF={lineup.replication_factor} " if lineup.replicated else ""
    theirs = lineup.reference.title
    found = []
    visible = size.visible
    if lineup.replicated and visible is not None:
        found.append(
            Verdict(
                "RF=3 publish -> visible to a subscriber, p99 <= 5 ms",
                label,
                f"{visible.p99_ms:.2f} ms",
                visible.failed == 0 and visible.p99_ms <= VISIBLE_TARGET_P99_MS_RF3,
            )
        )
    found.append(
        Verdict(
            f"{ours}per-message acked >= {theirs} per-message",
            label,
            f"{size.per_message_ratio:.2f}x",
            size.per_message_ratio >= PER_MESSAGE_TARGET_RATIO,
        )
    )
    plain = size.plain_ratio
    if plain is not None:
        found.append(
            Verdict(
                f"{ours}per-message acked, same plain request >= {theirs}",
                label,
                f"{plain:.2f}x",
                plain >= PER_MESSAGE_TARGET_RATIO,
            )
        )
    found.append(
        Verdict(
            f"{ours}producer batches >= 10x {theirs} per-message",
            label,
            f"{size.batch_ratio:.1f}x",
            size.batch_ratio >= BATCH_TARGET_RATIO,
        )
    )
    return found


def _fanout_verdict(readers: str, fanout: FanoutResult) -> Verdict:
    p99 = fanout.wake.p99_ms
    return Verdict(
        f"{fanout.pollers} {readers} woken by one publish, p99 <= 100 ms",
        None,
        f"{p99:.0f} ms, {fanout.woken} woken",
        fanout.woken == fanout.pollers and p99 <= FANOUT_TARGET_P99_MS,
    )


def _read_verdicts(size: SizeResult) -> list[Verdict]:
    """Each Liftlog reader at least as fast as the JetStream pull consumer (when measured)."""
    pull = size.reads.get(READ_PULL)
    if pull is None or pull.records_per_s <= 0:
        return []
    label = size_label(size.record_bytes)
    found = []
    for key in (READ_CLIENT, READ_ARROW):
        ours = size.reads.get(key)
        if ours is not None:
            ratio = ours.records_per_s / pull.records_per_s
            found.append(
                Verdict(
                    f"{READ_TITLES[key]} >= JetStream pull consumer",
                    label,
                    f"{ratio:.2f}x",
                    ratio >= READ_TARGET_RATIO,
                )
            )
    return found


def _fire_forget_verdicts(ff: FireForget, label: str) -> list[Verdict]:
    return [
        Verdict(
            "fire-and-forget >= 0.5x bare subscriber",
            label,
            f"{ff.ratio:.2f}x",
            ff.ratio >= FIRE_FORGET_TARGET_RATIO,
        ),
        Verdict(
            "fire-and-forget: zero drops",
            label,
            f"{ff.drops} dropped",
            ff.drops == 0 and ff.slow_consumer_drops == 0,
        ),
    ]


def _replica_verdicts(size: SizeResult, lineup: Lineup) -> list[Verdict]:
    label = size_label(size.record_bytes)
    lift, js = size.latency[lineup.liftlog.key], size.latency[lineup.reference.key]
    complete = all(c.replicas_complete == c.replicas for c in size.stored.values())
    return [
        Verdict(
            f"p99 publish->ack at {lift.rate_per_s} msg/s reported (Liftlog / JS)",
            label,
            f"{lift.p99_ms:.1f} / {js.p99_ms:.1f} ms",
            lift.count > 0 and js.count > 0,
        ),
        Verdict(
            "no acked record lost, every replica holds all",
            label,
            f"{size.lost} lost",
            size.lost == 0 and complete,
        ),
    ]
