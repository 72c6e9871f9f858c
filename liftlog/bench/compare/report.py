"""The printed report: one table per record size, then the targets.

CPU cells read ``publisher / NATS / replicas``, the leader first among the replicas (for one
node: ``publisher / NATS / node``). A side without a NATS process of its own (a JetStream
cluster, whose servers are its replicas) shows ``-`` there; a side without replica processes
(JetStream inside its nats-server) has no third part.
"""

from __future__ import annotations

from collections.abc import Callable

from liftlog.bench.compare.lineup import Lineup
from liftlog.bench.compare.results import BenchResult, SizeResult
from liftlog.bench.compare.sides import PUBLISHER, Side
from liftlog.bench.compare.verdicts import Verdict
from liftlog.bench.consume.fanout import FanoutResult
from liftlog.bench.consume.reads import READ_TITLES
from liftlog.bench.publish.fire_forget import SUBSCRIBER_CPU, FireForget
from liftlog.bench.publish.replica_check import StoredCheck
from liftlog.bench.toolkit.payload import size_label
from liftlog.bench.toolkit.table import num, render_table

ABSENT = "-"


def render_report(result: BenchResult, lineup: Lineup, found: list[Verdict]) -> str:
    machine = result.machine
    parts = [
        f"{lineup.liftlog.title} beside NATS {lineup.reference.title} ({machine['summary']}; "
        f"load average {machine['loadavg_at_start']} at start, "
        f"{machine.get('loadavg_at_end', '?')} at end)"
    ]
    parts += [f"note: {n}" for n in result.notes]
    replicas = f", {lineup.replication_factor} replicas" if lineup.replicated else ""
    for size in result.sizes:
        parts += ["", f"== record size {size_label(size.record_bytes)}{replicas} =="]
        parts.append(SizeTable(size, result, lineup).render())
        if size.plain:
            parts += ["", _plain_table(size, lineup)]
        if size.visible is not None:
            v = size.visible
            parts += [
                "",
                f"publish -> visible to a Client.subscribe iterator ({lineup.liftlog.title}, "
                f"{v.rate_per_s}/s): p50 {v.p50_ms:.2f} ms, p99 {v.p99_ms:.2f} ms, "
                f"max {v.max_ms:.2f} ms, {v.count} seen, {v.failed} not",
            ]
        if size.fire_forget is not None:
            parts += ["", _fire_forget_table(size.fire_forget, result, lineup)]
        if size.reads:
            parts += ["", _reads_table(size)]
    if result.fanout is not None:
        parts += ["", _fanout_line(result.fanout, "REST long polls")]
    if result.fanout_clients is not None:
        parts.append(_fanout_line(result.fanout_clients, "Client.subscribe iterators"))
    if result.isr_changes:
        changes = result.isr_changes
        parts += [
            "",
            f"ISR changes during the run: {changes['shrinks']} shrinks, "
            f"{changes['expands']} expands",
        ]
    parts += ["", f"node peak RSS (VmHWM): {_rss(result)}", "", _targets_table(found)]
    return "\n".join(parts)


def _plain_table(size: SizeResult, lineup: Lineup) -> str:
    """Per-message acked with the identical plain NATS request on both sides."""
    headers = ["same plain NATS request per record, both sides", "records/s", "MB/s"]
    rows = [
        [side.title, num(t.records_per_s), f"{t.mb_per_s:.2f}"]
        for side in lineup.sides
        if (t := size.plain.get(side.key)) is not None
    ]
    ratio = size.plain_ratio
    if ratio is not None:
        rows.append([f"{lineup.liftlog.title} / {lineup.reference.title}", f"{ratio:.2f}x", ""])
    return render_table(headers, rows)


def _reads_table(size: SizeResult) -> str:
    records = max(t.records for t in size.reads.values())
    headers = [f"reading {records:,} stored records back", "records/s", "MB/s"]
    rows = [
        [READ_TITLES.get(key, key), num(t.records_per_s), f"{t.mb_per_s:.2f}"]
        for key, t in size.reads.items()
    ]
    return render_table(headers, rows)


def _fanout_line(fanout: FanoutResult, readers: str) -> str:
    wake = fanout.wake
    return (
        f"fan-out: {fanout.woken} of {fanout.pollers} {readers} on one partition woken "
        f"by one publish: p50 {num(wake.p50_ms)} ms, p99 {num(wake.p99_ms)} ms, "
        f"max {num(wake.max_ms)} ms"
    )


class SizeTable:
    """The acked-publishing table of one record size: a column per side that was measured."""

    def __init__(self, size: SizeResult, result: BenchResult, lineup: Lineup) -> None:
        self.size = size
        self.result = result
        self.lineup = lineup
        self.sides = [s for s in lineup.sides if s.key in size.per_message]
        self.pad = [ABSENT] * (len(self.sides) - 1)
        self.cpu_label = "CPU % publisher/NATS/" + ("replicas" if lineup.replicated else "node")

    def render(self) -> str:
        rows = self._acked_rows() + self._batch_rows() + self._latency_rows()
        if self.size.stored:
            rows += self._replica_rows()
        titles = [s.title for s in self.sides]
        return render_table(["acked publishing", *titles], rows)

    def _each(self, render: Callable[[Side], str]) -> list[str]:
        return [render(s) for s in self.sides]

    def _cpu(self, percent: dict[str, float], side: Side) -> str:
        leader = self.size.leaders.get(side.key, "")
        return cpu_cell(percent, side, self.result.replica_names.get(side.key, []), leader)

    def _acked_rows(self) -> list[list[str]]:
        per_message, window = self.size.per_message, self.result.settings["ack_window"]
        return [
            [
                f"per-message acked (window {window}), records/s",
                *self._each(lambda s: num(per_message[s.key].records_per_s)),
            ],
            ["per-message acked, MB/s", *self._each(lambda s: num(per_message[s.key].mb_per_s, 2))],
            ["per-message acked, failed", *self._each(lambda s: str(per_message[s.key].failed))],
            ["per-message acked, each round, records/s", *self._each(self._rounds)],
            [
                f"per-message acked, {self.cpu_label}",
                *self._each(lambda s: self._cpu(per_message[s.key].cpu_percent, s)),
            ],
        ]

    def _batch_rows(self) -> list[list[str]]:
        size, settings = self.size, self.result.settings
        batch, liftlog = size.batches, self.lineup.liftlog
        return [
            [
                f"producer batches ({size.batch_records}/msg, {settings['batches_in_flight']} in "
                "flight), records/s",
                num(batch.records_per_s),
                *self.pad,
            ],
            ["producer batches, MB/s", num(batch.mb_per_s, 2), *self.pad],
            [
                f"producer batches / {self.lineup.reference.title} per-message",
                f"{size.batch_ratio:.1f}x",
                *self.pad,
            ],
            [
                f"producer batches, {self.cpu_label}",
                self._cpu(batch.cpu_percent, liftlog),
                *self.pad,
            ],
        ]

    def _latency_rows(self) -> list[list[str]]:
        rate = self.result.settings["latency_rate_per_s"]
        return [
            [f"latency at {rate} msg/s, p50 ms", *self._each(lambda s: self._latency(s, "p50_ms"))],
            ["latency, p99 ms", *self._each(lambda s: self._latency(s, "p99_ms"))],
            ["latency, max ms", *self._each(lambda s: self._latency(s, "max_ms"))],
        ]

    def _replica_rows(self) -> list[list[str]]:
        """What the replicas cost at the paced rate, and what each side stored of its acks."""
        latency, stored = self.size.latency, self.size.stored
        return [
            [
                f"latency, {self.cpu_label}",
                *self._each(lambda s: self._cpu(latency[s.key].cpu_percent, s)),
            ],
            ["acked / stored records (lost)", *self._each(lambda s: _stored(stored[s.key]))],
            ["replicas holding every acked record", *self._each(lambda s: _held(stored[s.key]))],
        ]

    def _rounds(self, side: Side) -> str:
        rounds = self.size.per_message_rounds.get(side.key, [])
        return " / ".join(num(r.records_per_s) for r in rounds)

    def _latency(self, side: Side, figure: str) -> str:
        latency = self.size.latency.get(side.key)
        return ABSENT if latency is None else num(getattr(latency, figure), 2)


def cpu_cell(percent: dict[str, float], side: Side, replicas: list[str], leader: str) -> str:
    """``70 / 20 / 60+15+15``: % of one core for the publisher, NATS, the leader, followers."""

    def share(name: str | None) -> str:
        return num(percent[name]) if name is not None and name in percent else ABSENT

    parts = [share(PUBLISHER), share(side.nats)]
    if replicas:
        ordered = sorted(replicas, key=lambda name: name != leader)  # leader first, stable
        parts.append("+".join(share(name) for name in ordered))
    return " / ".join(parts)


def _fire_forget_table(ff: FireForget, result: BenchResult, lineup: Lineup) -> str:
    liftlog = lineup.liftlog
    nodes = result.replica_names.get(liftlog.key, [])
    # the subscriber's process in the node's place: what recording the traffic costs each
    subscriber_cpu = {**ff.cpu_percent, **{n: ff.cpu_percent[SUBSCRIBER_CPU] for n in nodes}}
    rows = [
        ["records/s", num(ff.liftlog_records_per_s), num(ff.subscriber_records_per_s)],
        [
            "MB/s",
            num(ff.liftlog_records_per_s * ff.record_bytes / 1e6, 2),
            num(ff.subscriber_records_per_s * ff.record_bytes / 1e6, 2),
        ],
        [
            "records seen (of published)",
            f"{ff.recorded:,}/{ff.published:,}",
            f"{ff.subscriber_counted:,}/{ff.published:,}",
        ],
        ["Liftlog / bare subscriber", f"{ff.ratio:.2f}x", ""],
        ["drops (published - recorded)", str(ff.drops), ""],
        [
            "slow-consumer drops (node metric / server)",
            f"{ff.slow_consumer_drops} / {ff.server_slow_consumers}",
            "",
        ],
        [
            "CPU % publisher/NATS/recorder",
            cpu_cell(ff.cpu_percent, liftlog, nodes, ""),
            cpu_cell(subscriber_cpu, liftlog, nodes, ""),
        ],
    ]
    title = f"fire-and-forget ({ff.published / ff.publish_seconds:,.0f} msg/s offered)"
    return render_table([title, "Liftlog leader (HW)", "bare subscriber"], rows)


def _rss(result: BenchResult) -> str:
    """``123 MB`` for one node, ``node-1 123 MB, node-2 ...`` for several."""
    rss = result.node_peak_rss_mb
    if result.replication_factor == 1 and len(rss) == 1:
        return f"{next(iter(rss.values())):.0f} MB"
    return ", ".join(f"{name} {mb:.0f} MB" for name, mb in rss.items())


def _stored(check: StoredCheck) -> str:
    return f"{check.acked:,} / {check.stored:,} ({check.lost})"


def _held(check: StoredCheck) -> str:
    return f"{check.replicas_complete}/{check.replicas} (leader {check.leader})"


def _targets_table(found: list[Verdict]) -> str:
    rows = [[v.target, v.record_size or "", v.value, "met" if v.met else "MISSED"] for v in found]
    return render_table(["target", "size", "value", "verdict"], rows)
