"""The printed report: one table per record size, then the targets."""

from __future__ import annotations

from spark_log.bench.payload import size_label
from spark_log.bench.results import (
    COLUMN_TITLES,
    JETSTREAM,
    JETSTREAM_SYNC,
    LIFTLOG,
    BenchResult,
    SizeResult,
)
from spark_log.bench.table import num, render_table
from spark_log.bench.verdicts import Verdict

ABSENT = "-"


def render_report(result: BenchResult, found: list[Verdict]) -> str:
    parts = [f"Liftlog beside NATS JetStream ({result.machine['summary']})"]
    for size in result.sizes:
        parts += ["", f"== record size {size_label(size.record_bytes)} ==",
                  _acked_table(size, result), "", _fire_forget_table(size)]
    parts += ["", f"node peak RSS (VmHWM): {result.node_peak_rss_mb:.0f} MiB", "",
              _targets_table(found)]
    parts += [f"note: {n}" for n in result.notes]
    return "\n".join(parts)


def _acked_table(size: SizeResult, result: BenchResult) -> str:
    sides = [s for s in (LIFTLOG, JETSTREAM, JETSTREAM_SYNC) if s in size.per_message]
    settings = result.settings

    def per_side(get: str, decimals: int, table: str) -> list[str]:
        source = size.per_message if table == "tp" else size.latency
        return [num(getattr(source[s], get), decimals) if s in source else ABSENT for s in sides]

    batch = size.batches
    pad = [ABSENT] * (len(sides) - 1)
    rows = [
        [f"per-message acked (window {settings['ack_window']}), records/s",
         *per_side("records_per_s", 0, "tp")],
        ["per-message acked, MB/s", *per_side("mb_per_s", 2, "tp")],
        ["per-message acked, failed", *[str(size.per_message[s].failed) for s in sides]],
        [f"producer batches ({size.batch_records}/msg, {settings['batches_in_flight']} in "
         "flight), records/s", num(batch.records_per_s), *pad],
        ["producer batches, MB/s", num(batch.mb_per_s, 2), *pad],
        ["producer batches / JetStream per-message", f"{size.batch_ratio:.1f}x", *pad],
        [f"latency at {settings['latency_rate_per_s']} msg/s, p50 ms",
         *per_side("p50_ms", 2, "lat")],
        ["latency, p99 ms", *per_side("p99_ms", 2, "lat")],
        ["latency, max ms", *per_side("max_ms", 2, "lat")],
    ]
    return render_table(["acked publishing", *[COLUMN_TITLES[s] for s in sides]], rows)


def _fire_forget_table(size: SizeResult) -> str:
    ff = size.fire_forget
    rows = [
        ["records/s", num(ff.liftlog_records_per_s), num(ff.subscriber_records_per_s)],
        ["MB/s", num(ff.liftlog_records_per_s * ff.record_bytes / 1e6, 2),
         num(ff.subscriber_records_per_s * ff.record_bytes / 1e6, 2)],
        ["records seen (of published)", f"{ff.recorded:,}/{ff.published:,}",
         f"{ff.subscriber_counted:,}/{ff.published:,}"],
        ["Liftlog / bare subscriber", f"{ff.ratio:.2f}x", ""],
        ["drops (published - recorded)", str(ff.drops), ""],
        ["slow-consumer drops (node metric / server)",
         f"{ff.slow_consumer_drops} / {ff.server_slow_consumers}", ""],
    ]
    title = f"fire-and-forget ({ff.published / ff.publish_seconds:,.0f} msg/s offered)"
    return render_table([title, "Liftlog leader (HW)", "bare subscriber"], rows)


def _targets_table(found: list[Verdict]) -> str:
    rows = [[v.target, v.record_size or "", v.value, "met" if v.met else "MISSED"]
            for v in found]
    return render_table(["target", "size", "value", "verdict"], rows)
