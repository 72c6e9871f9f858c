"""The results of a run, per record size, and their JSON form (``--json``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from liftlog.bench.measure_fire_forget import FireForget
from liftlog.bench.stats import Latency, Throughput

LIFTLOG = "liftlog"
JETSTREAM = "jetstream"
JETSTREAM_SYNC = "jetstream_sync_always"
# The processes whose CPU every measurement reports (see cpu.CpuMeter).
PUBLISHER, NATS, NATS_SYNC, NODE = "publisher", "nats-server", "nats-server-sync", "node"
COLUMN_TITLES = {
    LIFTLOG: "Liftlog",
    JETSTREAM: "JetStream",
    JETSTREAM_SYNC: "JetStream sync=always",
}


@dataclass
class SizeResult:
    """Every figure for one record size; ``per_message`` and ``latency`` are keyed by side."""

    record_bytes: int
    per_message: dict[str, Throughput]
    batches: Throughput
    batch_records: int
    latency: dict[str, Latency]
    fire_forget: FireForget
    per_message_rounds: dict[str, list[Throughput]] = field(default_factory=dict)

    @property
    def batch_ratio(self) -> float:
        """Liftlog batched records/s over JetStream's per-message records/s."""
        js = self.per_message[JETSTREAM].records_per_s
        return self.batches.records_per_s / js if js > 0 else 0.0

    @property
    def per_message_ratio(self) -> float:
        """Liftlog per-message acked records/s over JetStream's (default sync) records/s."""
        js = self.per_message[JETSTREAM].records_per_s
        return self.per_message[LIFTLOG].records_per_s / js if js > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            **acked_size_json(self, LIFTLOG),
            "fire_and_forget": self.fire_forget.to_json(),
        }


@dataclass
class BenchResult:
    machine: dict[str, Any]
    settings: dict[str, Any]
    sizes: list[SizeResult] = field(default_factory=list)
    node_peak_rss_mb: float = 0.0
    notes: list[str] = field(default_factory=list)

    def to_json(self, verdicts: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "machine": self.machine,
            "settings": self.settings,
            "results": [s.to_json() for s in self.sizes],
            "node_peak_rss_mb": round(self.node_peak_rss_mb, 1),
            "targets": verdicts,
            "notes": self.notes,
        }


def acked_size_json(result: Any, liftlog_side: str) -> dict[str, Any]:
    """The figures every per-size result shares (single-node and replicated runs alike)."""

    def rounds(side: str) -> list[float]:
        return [round(r.records_per_s, 1) for r in result.per_message_rounds.get(side, [])]

    return {
        "record_bytes": result.record_bytes,
        "per_message_acked": {
            k: {**v.to_json(), "rounds_records_per_s": rounds(k)}
            for k, v in result.per_message.items()
        },
        "per_message_ratio_liftlog_to_jetstream": round(result.per_message_ratio, 3),
        "producer_batches": {
            "records_per_batch": result.batch_records,
            liftlog_side: result.batches.to_json(),
            "ratio_to_jetstream_per_message": round(result.batch_ratio, 2),
        },
        "latency": {k: v.to_json() for k, v in result.latency.items()},
    }
