"""The printed report of the replicated run: one table per record size, then the targets.

CPU cells read ``publisher / NATS / replicas``, leader first: for Liftlog the NATS column is
its one nats-server and the replicas are the three nodes; JetStream has no separate NATS
process (its three servers are the replicas), hence ``-``.
"""

from __future__ import annotations

from collections.abc import Callable

from liftlog.bench.payload import size_label
from liftlog.bench.replica_check import StoredCheck
from liftlog.bench.replicated_results import (
    LIFTLOG_RF3,
    REPLICATED_SIDES,
    REPLICATED_TITLES,
    ReplicatedResult,
    ReplicatedSizeResult,
)
from liftlog.bench.results import NATS, PUBLISHER
from liftlog.bench.table import num, render_table
from liftlog.bench.verdicts import Verdict

ABSENT = "-"


def render_replicated_report(result: ReplicatedResult, found: list[Verdict]) -> str:
    machine = result.machine
    parts = [
        f"Liftlog RF=3 beside NATS JetStream R3 ({machine['summary']}; load average "
        f"{machine['loadavg_at_start']} at start, {machine.get('loadavg_at_end', '?')} "
        "at end)"
    ]
    parts += [f"note: {n}" for n in result.notes]
    for size in result.sizes:
        parts += [
            "",
            f"== record size {size_label(size.record_bytes)}, 3 replicas ==",
            _size_table(size, result),
        ]
    rss = ", ".join(f"{name} {mb:.0f} MB" for name, mb in result.node_peak_rss_mb.items())
    parts += ["", f"node peak RSS (VmHWM): {rss}", "", _targets_table(found)]
    return "\n".join(parts)


def _size_table(size: ReplicatedSizeResult, result: ReplicatedResult) -> str:
    settings = result.settings
    sides = [s for s in REPLICATED_SIDES if s in size.per_message]

    def each(render: Callable[[str], str]) -> list[str]:
        return [render(s) for s in sides]

    def cpu(percent: dict[str, float], side: str) -> str:
        return _cpu(percent, side, size.leaders.get(side, ""), result.replica_names[side])

    batch, pad = size.batches, [ABSENT] * (len(sides) - 1)
    rows = [
        [
            f"per-message acked (window {settings['ack_window']}), records/s",
            *each(lambda s: num(size.per_message[s].records_per_s)),
        ],
        ["per-message acked, MB/s", *each(lambda s: num(size.per_message[s].mb_per_s, 2))],
        ["per-message acked, failed", *each(lambda s: str(size.per_message[s].failed))],
        ["per-message acked, each round, records/s", *each(lambda s: _rounds(size, s))],
        [
            "per-message acked, CPU % publisher/NATS/replicas",
            *each(lambda s: cpu(size.per_message[s].cpu_percent, s)),
        ],
        [
            f"producer batches ({size.batch_records}/msg, {settings['batches_in_flight']} in "
            "flight), records/s",
            num(batch.records_per_s),
            *pad,
        ],
        ["producer batches, MB/s", num(batch.mb_per_s, 2), *pad],
        ["producer batches / JetStream R3 per-message", f"{size.batch_ratio:.1f}x", *pad],
        [
            "producer batches, CPU % publisher/NATS/replicas",
            cpu(batch.cpu_percent, LIFTLOG_RF3),
            *pad,
        ],
        [
            f"latency at {settings['latency_rate_per_s']} msg/s, p50 ms",
            *each(lambda s: num(size.latency[s].p50_ms, 2)),
        ],
        ["latency, p99 ms", *each(lambda s: num(size.latency[s].p99_ms, 2))],
        ["latency, max ms", *each(lambda s: num(size.latency[s].max_ms, 2))],
        [
            "latency, CPU % publisher/NATS/replicas",
            *each(lambda s: cpu(size.latency[s].cpu_percent, s)),
        ],
        ["acked / stored records (lost)", *each(lambda s: _stored(size.stored[s]))],
        ["replicas holding every acked record", *each(lambda s: _replicas(size.stored[s]))],
    ]
    return render_table(["acked publishing", *[REPLICATED_TITLES[s] for s in sides]], rows)


def _rounds(size: ReplicatedSizeResult, side: str) -> str:
    return " / ".join(num(r.records_per_s) for r in size.per_message_rounds.get(side, []))


def _cpu(percent: dict[str, float], side: str, leader: str, replicas: list[str]) -> str:
    """``70 / 20 / 60+15+15``: % of one core for the publisher, NATS, the leader, followers."""
    ordered = sorted(replicas, key=lambda name: name != leader)  # leader first, stable
    nats = num(percent[NATS]) if side == LIFTLOG_RF3 and NATS in percent else ABSENT
    shares = "+".join(num(percent[n]) if n in percent else ABSENT for n in ordered)
    return f"{num(percent.get(PUBLISHER, 0.0))} / {nats} / {shares}"


def _stored(check: StoredCheck) -> str:
    return f"{check.acked:,} / {check.stored:,} ({check.lost})"


def _replicas(check: StoredCheck) -> str:
    return f"{check.replicas_complete}/{check.replicas} (leader {check.leader})"


def _targets_table(found: list[Verdict]) -> str:
    rows = [[v.target, v.record_size or "", v.value, "met" if v.met else "MISSED"] for v in found]
    return render_table(["target", "size", "value", "verdict"], rows)
