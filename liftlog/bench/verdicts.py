"""The targets the figures are held against, checked in one place (printed, never asserted)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from liftlog.bench.payload import size_label
from liftlog.bench.results import BenchResult

PER_MESSAGE_TARGET_RATIO = 1.0
BATCH_TARGET_RATIO = 10.0
FIRE_FORGET_TARGET_RATIO = 0.5
RSS_TARGET_MB = 300.0


@dataclass(frozen=True)
class Verdict:
    target: str
    record_size: str | None
    value: str
    met: bool

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def verdicts(result: BenchResult) -> list[Verdict]:
    found: list[Verdict] = []
    for size in result.sizes:
        label = size_label(size.record_bytes)
        ff = size.fire_forget
        found += [
            Verdict(
                "per-message acked >= JetStream per-message",
                label,
                f"{size.per_message_ratio:.2f}x",
                size.per_message_ratio >= PER_MESSAGE_TARGET_RATIO,
            ),
            Verdict(
                "producer batches >= 10x JetStream per-message",
                label,
                f"{size.batch_ratio:.1f}x",
                size.batch_ratio >= BATCH_TARGET_RATIO,
            ),
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
    found.append(
        Verdict(
            "node peak RSS < 300 MB",
            None,
            f"{result.node_peak_rss_mb:.0f} MB",
            result.node_peak_rss_mb < RSS_TARGET_MB,
        )
    )
    return found
