"""The results of a replicated run (``--replication 3``), per record size, and their JSON form.

Two sides only: Liftlog RF=3 (``acks=all``) and JetStream R3. There is no fire-and-forget
figure here: with plain publishes nothing waits for the followers, so it would measure the
leader alone, which the single-node run already does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from liftlog.bench.replica_check import StoredCheck
from liftlog.bench.results import acked_size_json
from liftlog.bench.stats import Latency, Throughput

LIFTLOG_RF3 = "liftlog_rf3"
JETSTREAM_R3 = "jetstream_r3"
REPLICATED_SIDES = (LIFTLOG_RF3, JETSTREAM_R3)
REPLICATED_TITLES = {LIFTLOG_RF3: "Liftlog RF=3", JETSTREAM_R3: "JetStream R3"}


@dataclass
class ReplicatedSizeResult:
    """Every figure for one record size; the dicts are keyed by side."""

    record_bytes: int
    per_message: dict[str, Throughput]
    per_message_rounds: dict[str, list[Throughput]]
    batches: Throughput
    batch_records: int
    latency: dict[str, Latency]
    stored: dict[str, StoredCheck]
    # Leader of each side's stream when it was created (the stored check has it at the end).
    leaders: dict[str, str] = field(default_factory=dict)

    @property
    def per_message_ratio(self) -> float:
        """Liftlog RF=3 per-message acked records/s over JetStream R3's."""
        js = self.per_message[JETSTREAM_R3].records_per_s
        return self.per_message[LIFTLOG_RF3].records_per_s / js if js > 0 else 0.0

    @property
    def batch_ratio(self) -> float:
        """Liftlog RF=3 batched records/s over JetStream R3's per-message records/s."""
        js = self.per_message[JETSTREAM_R3].records_per_s
        return self.batches.records_per_s / js if js > 0 else 0.0

    @property
    def lost(self) -> int:
        return sum(check.lost for check in self.stored.values())

    def to_json(self) -> dict[str, Any]:
        return {
            **acked_size_json(self, LIFTLOG_RF3),
            "stored": {k: v.to_json() for k, v in self.stored.items()},
            "leaders_at_start": self.leaders,
        }


@dataclass
class ReplicatedResult:
    machine: dict[str, Any]
    settings: dict[str, Any]
    sizes: list[ReplicatedSizeResult] = field(default_factory=list)
    # VmHWM of each Liftlog node, by name (node-1 ...).
    node_peak_rss_mb: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # Each side's replica processes (node-1 ..., bench-r3-1 ...), for the CPU figures.
    replica_names: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self, verdicts: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "machine": self.machine,
            "settings": self.settings,
            "results": [s.to_json() for s in self.sizes],
            "node_peak_rss_mb": {k: round(v, 1) for k, v in self.node_peak_rss_mb.items()},
            "targets": verdicts,
            "notes": self.notes,
            "replicas": self.replica_names,
        }
