"""The results of a run, per record size, and their JSON form (``--json``).

Every run has the acked figures of each side. A single node adds fire-and-forget recording
beside a bare subscriber; a replicated run adds what each side stored against what it acked
(with plain publishes nothing waits for the followers, so a replicated fire-and-forget figure
would measure the leader alone, which the single-node run already does).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from liftlog.bench.consume.fanout import FanoutResult
from liftlog.bench.publish.fire_forget import FireForget
from liftlog.bench.publish.replica_check import StoredCheck
from liftlog.bench.toolkit.json_object import JsonObject
from liftlog.bench.toolkit.stats import Latency, Throughput


@dataclass
class SizeResult:
    """Every figure for one record size; the dicts are keyed by side. ``liftlog`` and
    ``reference`` name the two sides the ratios compare."""

    record_bytes: int
    liftlog: str
    reference: str
    per_message: dict[str, Throughput]
    per_message_rounds: dict[str, list[Throughput]]
    batches: Throughput
    batch_records: int
    latency: dict[str, Latency]
    fire_forget: FireForget | None = None
    stored: dict[str, StoredCheck] = field(default_factory=dict)
    # Leader of each side's stream when it was created (the stored check has it at the end).
    leaders: dict[str, str] = field(default_factory=dict)
    # Stored records read back, by reader (Liftlog's client, REST Arrow, JetStream pull).
    reads: dict[str, Throughput] = field(default_factory=dict)
    # Per-message acked through the same plain NATS request code on both sides.
    plain: dict[str, Throughput] = field(default_factory=dict)
    plain_rounds: dict[str, list[Throughput]] = field(default_factory=dict)
    # Liftlog: from a publish to a subscribed Client.subscribe iterator yielding the record
    visible: Latency | None = None

    @property
    def per_message_ratio(self) -> float:
        """Liftlog per-message acked records/s over the reference JetStream side's."""
        js = self.per_message[self.reference].records_per_s
        return self.per_message[self.liftlog].records_per_s / js if js > 0 else 0.0

    @property
    def plain_ratio(self) -> float | None:
        """The same ratio with the identical plain request on both sides (None: not measured)."""
        ours, theirs = self.plain.get(self.liftlog), self.plain.get(self.reference)
        if ours is None or theirs is None or theirs.records_per_s <= 0:
            return None
        return ours.records_per_s / theirs.records_per_s

    @property
    def batch_ratio(self) -> float:
        """Liftlog batched records/s over the reference JetStream side's per-message records/s."""
        js = self.per_message[self.reference].records_per_s
        return self.batches.records_per_s / js if js > 0 else 0.0

    @property
    def lost(self) -> int:
        return sum(check.lost for check in self.stored.values())

    def to_json(self) -> JsonObject:
        body = self._acked_json()
        if self.fire_forget is not None:
            body["fire_and_forget"] = self.fire_forget.to_json()
        if self.reads:
            body["consumer_reads"] = {k: v.to_json() for k, v in self.reads.items()}
        if self.visible is not None:
            body["publish_to_visible"] = {self.liftlog: self.visible.to_json()}
        if self.plain:
            body["per_message_plain_request"] = _with_rounds(self.plain, self.plain_rounds)
            ratio = self.plain_ratio
            body["plain_request_ratio_liftlog_to_jetstream"] = (
                round(ratio, 3) if ratio is not None else None
            )
        if self.stored:
            body["stored"] = {k: v.to_json() for k, v in self.stored.items()}
            body["leaders_at_start"] = self.leaders
        return body

    def _acked_json(self) -> JsonObject:
        return {
            "record_bytes": self.record_bytes,
            "per_message_acked": _with_rounds(self.per_message, self.per_message_rounds),
            "per_message_ratio_liftlog_to_jetstream": round(self.per_message_ratio, 3),
            "producer_batches": {
                "records_per_batch": self.batch_records,
                self.liftlog: self.batches.to_json(),
                "ratio_to_jetstream_per_message": round(self.batch_ratio, 2),
            },
            "latency": {k: v.to_json() for k, v in self.latency.items()},
        }


def _with_rounds(medians: dict[str, Throughput], rounds: dict[str, list[Throughput]]) -> JsonObject:
    """Each side's median round, with the records/s of every round beside it."""
    return {
        side: {
            **median.to_json(),
            "rounds_records_per_s": [round(r.records_per_s, 1) for r in rounds.get(side, [])],
        }
        for side, median in medians.items()
    }


@dataclass
class BenchResult:
    machine: JsonObject
    settings: JsonObject
    replication_factor: int
    sizes: list[SizeResult] = field(default_factory=list)
    # VmHWM of each Liftlog node, by name ("node" for a single one, else node-1 ...).
    node_peak_rss_mb: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # Each side's replica processes (node-1 ..., bench-r3-1 ...), for the CPU figures.
    replica_names: dict[str, list[str]] = field(default_factory=dict)
    fanout: FanoutResult | None = None
    # the same with Client.subscribe iterators instead of raw REST long polls
    fanout_clients: FanoutResult | None = None
    # ISR shrinks and expands the Liftlog nodes counted over the run (0 and 0 when healthy)
    isr_changes: dict[str, int] = field(default_factory=dict)

    def to_json(self, verdicts: list[JsonObject]) -> JsonObject:
        body: JsonObject = {
            "machine": self.machine,
            "settings": self.settings,
            "results": [s.to_json() for s in self.sizes],
            "node_peak_rss_mb": self._rss_json(),
            "targets": verdicts,
            "notes": self.notes,
        }
        if self.replication_factor > 1:
            body["replicas"] = self.replica_names
        if self.fanout is not None:
            body["fanout"] = self.fanout.to_json()
        if self.fanout_clients is not None:
            body["fanout_client_subscriptions"] = self.fanout_clients.to_json()
        if self.isr_changes:
            body["isr_changes"] = dict(self.isr_changes)
        return body

    def _rss_json(self) -> float | dict[str, float]:
        """One node: its figure; several: each by name."""
        rss = {k: round(v, 1) for k, v in self.node_peak_rss_mb.items()}
        if self.replication_factor == 1 and len(rss) == 1:
            return next(iter(rss.values()))
        return rss
