"""The printed report of both line-ups from one code path: its columns, CPU cells and rows."""

from __future__ import annotations

import re

from liftlog.bench.compare.lineup import REPLICATED, SINGLE_NODE, Lineup
from liftlog.bench.compare.report import render_report
from liftlog.bench.compare.results import BenchResult
from liftlog.bench.compare.verdicts import verdicts
from tests.support.bench_results import replicated_result, single_node_result


def _row(report: str, label: str) -> list[str]:
    """The cells of the first row starting with ``label`` (cells are two or more spaces apart)."""
    for line in report.splitlines():
        if line.startswith(label):
            return re.split(r"\s{2,}", line[len(label) :].strip())
    raise AssertionError(f"no row {label!r} in:\n{report}")


def _render(result: BenchResult, lineup: Lineup) -> str:
    return render_report(result, lineup, verdicts(result, lineup))


def test_single_node_report_has_a_column_per_side_and_the_fire_and_forget_table() -> None:
    report = _render(single_node_result(), SINGLE_NODE)
    assert report.startswith("Liftlog beside NATS JetStream (2 CPUs;")
    assert "== record size 100 B ==" in report
    assert _row(report, "acked publishing") == ["Liftlog", "JetStream", "JetStream sync=always"]
    assert _row(report, "per-message acked, each round, records/s") == [
        "1,000 / 1,000 / 1,000",
        "1,000 / 1,000 / 1,000",
        "1,000",
    ]
    assert "fire-and-forget (20,000 msg/s offered)" in report
    assert "acked / stored records (lost)" not in report
    assert "node peak RSS (VmHWM): 123 MB" in report


def test_single_node_cpu_cells_name_the_node_and_each_side_s_nats() -> None:
    report = _render(single_node_result(), SINGLE_NODE)
    assert _row(report, "per-message acked, CPU % publisher/NATS/node") == [
        "70 / 20 / 60",
        "70 / 20",
        "70 / 5",
    ]
    assert _row(report, "CPU % publisher/NATS/recorder") == ["70 / 20 / 60", "70 / 20 / 40"]


def test_a_dropped_sync_always_column_leaves_two_columns_and_a_note_under_the_heading() -> None:
    dropped = single_node_result(False, ("JetStream sync=always column dropped: no",))
    report = _render(dropped, SINGLE_NODE)
    assert _row(report, "acked publishing") == ["Liftlog", "JetStream"]
    assert report.splitlines()[1] == "note: JetStream sync=always column dropped: no"


def test_replicated_report_lists_replicas_leader_first_and_what_each_side_stored() -> None:
    report = _render(replicated_result(), REPLICATED)
    assert report.startswith("Liftlog RF=3 beside NATS JetStream R3 (2 CPUs;")
    assert "== record size 100 B, 3 replicas ==" in report
    assert _row(report, "acked publishing") == ["Liftlog RF=3", "JetStream R3"]
    assert _row(report, "per-message acked, CPU % publisher/NATS/replicas") == [
        "70 / 20 / 15+60+14",
        "70 / - / 11+30+10",
    ]
    assert _row(report, "producer batches / JetStream R3 per-message") == ["30.0x", "-"]
    assert _row(report, "latency at 500 msg/s, p50 ms") == ["2.00", "2.00"]
    assert _row(report, "acked / stored records (lost)") == [
        "5,000 / 5,000 (0)",
        "4,000 / 3,990 (10)",
    ]
    assert _row(report, "replicas holding every acked record") == [
        "3/3 (leader node-2)",
        "2/3 (leader bench-r3-3)",
    ]
    assert "fire-and-forget" not in report
    assert "node peak RSS (VmHWM): node-1 100 MB, node-2 110 MB, node-3 320 MB" in report
