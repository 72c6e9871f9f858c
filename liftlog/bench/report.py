"""The printed report: one table per record size, then the targets."""

from __future__ import annotations

from liftlog.bench.measure_fire_forget import SUBSCRIBER_CPU
from liftlog.bench.payload import size_label
from liftlog.bench.results import (
    COLUMN_TITLES,
    JETSTREAM,
    JETSTREAM_SYNC,
    LIFTLOG,
    NATS,
    NATS_SYNC,
    NODE,
    PUBLISHER,
    BenchResult,
    SizeResult,
)
from liftlog.bench.table import num, render_table
from liftlog.bench.verdicts import Verdict

ABSENT = "-"
# The NATS server each side published through (for its CPU figure).
SIDE_NATS = {LIFTLOG: NATS, JETSTREAM: NATS, JETSTREAM_SYNC: NATS_SYNC}


def render_report(result: BenchResult, found: list[Verdict]) -> str:
    machine = result.machine
    parts = [
        f"Liftlog beside NATS JetStream ({machine['summary']}; load average "
        f"{machine['loadavg_at_start']} at start, {machine.get('loadavg_at_end', '?')} "
        "at end)"
    ]
    for size in result.sizes:
        parts += [
            "",
            f"== record size {size_label(size.record_bytes)} ==",
            _acked_table(size, result),
            "",
            _fire_forget_table(size),
        ]
    parts += [
        "",
        f"node peak RSS (VmHWM): {result.node_peak_rss_mb:.0f} MB",
        "",
        _targets_table(found),
    ]
    parts += [f"note: {n}" for n in result.notes]
    return "\n".join(parts)


def _acked_table(size: SizeResult, result: BenchResult) -> str:
    sides = [s for s in (LIFTLOG, JETSTREAM, JETSTREAM_SYNC) if s in size.per_message]
    settings = result.settings

    def throughput(attr: str, decimals: int) -> list[str]:
        return [num(getattr(size.per_message[s], attr), decimals) for s in sides]

    def latency(attr: str) -> list[str]:
        return [
            num(getattr(size.latency[s], attr), 2) if s in size.latency else ABSENT for s in sides
        ]

    batch = size.batches
    pad = [ABSENT] * (len(sides) - 1)
    rows = [
        [
            f"per-message acked (window {settings['ack_window']}), records/s",
            *throughput("records_per_s", 0),
        ],
        ["per-message acked, MB/s", *throughput("mb_per_s", 2)],
        ["per-message acked, failed", *[str(size.per_message[s].failed) for s in sides]],
        ["per-message acked, each round, records/s", *[_rounds(size, s) for s in sides]],
        [
            "per-message acked, CPU % publisher/NATS/node",
            *[_cpu(size.per_message[s].cpu_percent, s) for s in sides],
        ],
        [
            f"producer batches ({size.batch_records}/msg, {settings['batches_in_flight']} in "
            "flight), records/s",
            num(batch.records_per_s),
            *pad,
        ],
        ["producer batches, MB/s", num(batch.mb_per_s, 2), *pad],
        ["producer batches / JetStream per-message", f"{size.batch_ratio:.1f}x", *pad],
        ["producer batches, CPU % publisher/NATS/node", _cpu(batch.cpu_percent, LIFTLOG), *pad],
        [f"latency at {settings['latency_rate_per_s']} msg/s, p50 ms", *latency("p50_ms")],
        ["latency, p99 ms", *latency("p99_ms")],
        ["latency, max ms", *latency("max_ms")],
    ]
    return render_table(["acked publishing", *[COLUMN_TITLES[s] for s in sides]], rows)


def _fire_forget_table(size: SizeResult) -> str:
    ff = size.fire_forget
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
            _cpu(ff.cpu_percent, LIFTLOG),
            _cpu({**ff.cpu_percent, NODE: ff.cpu_percent[SUBSCRIBER_CPU]}, LIFTLOG),
        ],
    ]
    title = f"fire-and-forget ({ff.published / ff.publish_seconds:,.0f} msg/s offered)"
    return render_table([title, "Liftlog leader (HW)", "bare subscriber"], rows)


def _rounds(size: SizeResult, side: str) -> str:
    return " / ".join(num(r.records_per_s) for r in size.per_message_rounds.get(side, []))


def _cpu(percent: dict[str, float], side: str) -> str:
    """``69 / 16 / 65``: % of one core for the publisher, its NATS server and the node."""
    names = [PUBLISHER, SIDE_NATS[side]] + ([NODE] if side == LIFTLOG else [])
    return " / ".join(num(percent[n]) if n in percent else ABSENT for n in names)


def _targets_table(found: list[Verdict]) -> str:
    rows = [[v.target, v.record_size or "", v.value, "met" if v.met else "MISSED"] for v in found]
    return render_table(["target", "size", "value", "verdict"], rows)
