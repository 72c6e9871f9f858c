"""The targets of the replicated run, checked in one place (printed, never asserted).

Per-message acked >= JetStream R3 and producer batches >= 10x JetStream R3 per-message, as in
the single-node run; p99 latency has no threshold (the issue asks for it to be reported);
and no acked record may be missing from any replica.
"""

from __future__ import annotations

from liftlog.bench.payload import size_label
from liftlog.bench.replicated_results import (
    JETSTREAM_R3,
    LIFTLOG_RF3,
    ReplicatedResult,
    ReplicatedSizeResult,
)
from liftlog.bench.verdicts import (
    BATCH_TARGET_RATIO,
    PER_MESSAGE_TARGET_RATIO,
    RSS_TARGET_MB,
    Verdict,
)


def replicated_verdicts(result: ReplicatedResult) -> list[Verdict]:
    found: list[Verdict] = []
    for size in result.sizes:
        found += _size_verdicts(size)
    if result.node_peak_rss_mb:
        peak = max(result.node_peak_rss_mb.values())
        found.append(
            Verdict(
                "node peak RSS < 300 MB (largest of 3)",
                None,
                f"{peak:.0f} MB",
                peak < RSS_TARGET_MB,
            )
        )
    return found


def _size_verdicts(size: ReplicatedSizeResult) -> list[Verdict]:
    label = size_label(size.record_bytes)
    lift, js = size.latency[LIFTLOG_RF3], size.latency[JETSTREAM_R3]
    complete = all(c.replicas_complete == c.replicas for c in size.stored.values())
    return [
        Verdict(
            "RF=3 per-message acked >= JetStream R3 per-message",
            label,
            f"{size.per_message_ratio:.2f}x",
            size.per_message_ratio >= PER_MESSAGE_TARGET_RATIO,
        ),
        Verdict(
            "RF=3 producer batches >= 10x JetStream R3 per-message",
            label,
            f"{size.batch_ratio:.1f}x",
            size.batch_ratio >= BATCH_TARGET_RATIO,
        ),
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
