"""``liftlog bench`` (one node and RF=3) and every script under ``bench/`` end to end with tiny
sizes: every figure present, nothing lost.

No timing assertions (the benchmark prints numbers, it does not assert them); this only
checks that each measurement ran, produced positive figures, lost no record and stopped
every process it started. The script smokes start Spark or stacks of their own and take up to
a few minutes each: they are marked slow and run with ``make bench-smoke`` (with the rest of
this module), not in ``make test``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from liftlog.bench.runner import run_bench
from liftlog.embedded.process import live_children
from tests.support.paths import REPO
from tests.support.waiting import wait_for

SMOKE_RECORDS = 2000
SMOKE_SIZE = 100
SIDES = ("liftlog", "jetstream", "jetstream_sync_always")
SMOKE_FANOUT = 50

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, list]:
    """One smoke run for the module; also the children it left behind (should be none)."""
    before = set(live_children())  # other fixtures' servers may be running in this session
    out = tmp_path_factory.mktemp("bench") / "results.json"
    assert (
        run_bench(records=SMOKE_RECORDS, sizes=[SMOKE_SIZE], json_path=out, fanout=SMOKE_FANOUT)
        == 0
    )
    leftovers = [c for c in live_children() if c not in before]
    return json.loads(Path(out).read_text()), leftovers


@pytest.fixture
def bench_json(bench_run) -> dict:
    return bench_run[0]


def test_every_process_is_stopped(bench_run):
    _, leftovers = bench_run
    assert leftovers == []


def test_per_message_acked_on_every_side(bench_json):
    (result,) = bench_json["results"]
    assert result["record_bytes"] == SMOKE_SIZE
    for side in SIDES:
        figures = result["per_message_acked"][side]
        assert figures["records"] == SMOKE_RECORDS, side
        assert figures["failed"] == 0, (side, figures["first_error"])
        assert figures["records_per_s"] > 0 and figures["mb_per_s"] > 0, side
    assert result["per_message_ratio_liftlog_to_jetstream"] > 0


def test_the_same_plain_request_on_both_sides(bench_json):
    """Liftlog and the reference JetStream stream through identical publisher code."""
    (result,) = bench_json["results"]
    plain = result["per_message_plain_request"]
    assert sorted(plain) == ["jetstream", "liftlog"]
    for side, figures in plain.items():
        assert figures["records"] == SMOKE_RECORDS, side
        assert figures["failed"] == 0, (side, figures["first_error"])
        assert len(figures["rounds_records_per_s"]) == 3, side
    assert result["plain_request_ratio_liftlog_to_jetstream"] > 0
    targets = [t["target"] for t in bench_json["targets"]]
    assert "per-message acked, same plain request >= JetStream" in targets


def test_publish_to_visible_for_a_subscriber(bench_json):
    visible = bench_json["results"][0]["publish_to_visible"]["liftlog"]
    assert visible["count"] > 0 and visible["failed"] == 0
    assert 0 < visible["p50_ms"] <= visible["p99_ms"] <= visible["max_ms"]


def test_producer_batches(bench_json):
    batches = bench_json["results"][0]["producer_batches"]
    assert batches["records_per_batch"] > 0
    assert batches["liftlog"]["failed"] == 0
    assert batches["liftlog"]["records"] >= SMOKE_RECORDS
    assert batches["liftlog"]["records_per_s"] > 0 and batches["liftlog"]["mb_per_s"] > 0
    assert batches["ratio_to_jetstream_per_message"] > 0


def test_latency_on_every_side(bench_json):
    latency = bench_json["results"][0]["latency"]
    for side in SIDES:
        figures = latency[side]
        assert figures["count"] > 0 and figures["failed"] == 0, side
        assert 0 < figures["p50_ms"] <= figures["p99_ms"] <= figures["max_ms"], side


def test_fire_and_forget_loses_nothing(bench_json):
    ff = bench_json["results"][0]["fire_and_forget"]
    assert ff["published"] == SMOKE_RECORDS
    assert ff["recorded"] == SMOKE_RECORDS
    assert ff["subscriber_counted"] == SMOKE_RECORDS
    assert ff["drops"] == 0 and ff["slow_consumer_drops"] == 0
    for key in (
        "liftlog_records_per_s",
        "subscriber_records_per_s",
        "ratio",
        "publisher_records_per_s",
    ):
        assert ff[key] > 0, key
    assert ff["cpu_percent"]["subscriber"] > 0


def test_stored_records_are_read_back_by_every_reader(bench_json):
    (result,) = bench_json["results"]
    reads = result["consumer_reads"]
    assert set(reads) == {
        "liftlog_client_subscribe",
        "liftlog_rest_arrow",
        "jetstream_pull_consumer",
    }
    for reader, figures in reads.items():
        assert figures["records"] == SMOKE_RECORDS and figures["records_per_s"] > 0, reader


@pytest.mark.parametrize("readers", ["fanout", "fanout_client_subscriptions"])
def test_fanout_wakes_every_long_poll_and_every_subscription(bench_json, readers):
    fanout = bench_json[readers]
    assert fanout["pollers"] == fanout["woken"] == SMOKE_FANOUT
    wake = fanout["wake"]
    assert wake["failed"] == 0 and 0 < wake["p50_ms"] <= wake["p99_ms"] <= wake["max_ms"]
    targets = [t["target"] for t in bench_json["targets"]]
    assert any(t.startswith(f"{SMOKE_FANOUT} ") and "p99 <= 100 ms" in t for t in targets)


def test_node_rss_and_targets(bench_json):
    assert bench_json["node_peak_rss_mb"] > 0
    assert bench_json["machine"]["cpus"] >= 1
    targets = bench_json["targets"]
    assert targets and all(isinstance(t["met"], bool) for t in targets)


REPLICATED_SMOKE_RECORDS = 500
REPLICATED_SIDES = ("liftlog_rf3", "jetstream_r3")


@pytest.mark.timeout(90)
@pytest.mark.slow
def test_replicated_mode_reports_every_figure_and_loses_nothing(tmp_path):
    """``--replication 3`` with tiny counts: both sides measured, every acked record stored
    on all three replicas, every process stopped. No timing assertions."""
    before = set(live_children())
    out = tmp_path / "results-rf3.json"
    assert (
        run_bench(
            records=REPLICATED_SMOKE_RECORDS,
            sizes=[SMOKE_SIZE],
            json_path=out,
            replication=3,
            fanout=SMOKE_FANOUT,
        )
        == 0
    )
    assert [c for c in live_children() if c not in before] == []
    body = json.loads(out.read_text())
    assert body["settings"]["replication_factor"] == 3
    (result,) = body["results"]
    assert result["record_bytes"] == SMOKE_SIZE
    for side in REPLICATED_SIDES:
        acked = result["per_message_acked"][side]
        assert acked["records"] == REPLICATED_SMOKE_RECORDS, side
        assert acked["failed"] == 0, (side, acked["first_error"])
        assert acked["records_per_s"] > 0 and len(acked["rounds_records_per_s"]) == 3, side
        latency = result["latency"][side]
        assert latency["count"] > 0 and latency["failed"] == 0, side
        assert 0 < latency["p50_ms"] <= latency["p99_ms"] <= latency["max_ms"], side
        stored = result["stored"][side]
        assert stored["acked"] > 0 and stored["lost"] == 0, (side, stored)
        assert stored["stored"] >= stored["acked"], (side, stored)
        assert stored["replicas_complete"] == stored["replicas"] == 3, (side, stored)
    batches = result["producer_batches"]
    assert batches["liftlog_rf3"]["failed"] == 0
    assert batches["liftlog_rf3"]["records"] >= REPLICATED_SMOKE_RECORDS
    assert batches["ratio_to_jetstream_per_message"] > 0
    assert result["per_message_ratio_liftlog_to_jetstream"] > 0
    plain = result["per_message_plain_request"]
    assert sorted(plain) == ["jetstream_r3", "liftlog_rf3"]
    assert result["publish_to_visible"]["liftlog_rf3"]["failed"] == 0
    assert all(
        p["failed"] == 0 and p["records"] == REPLICATED_SMOKE_RECORDS for p in plain.values()
    )
    assert sorted(body["node_peak_rss_mb"]) == ["node-1", "node-2", "node-3"]
    assert body["targets"] and all(isinstance(t["met"], bool) for t in body["targets"])
    assert body["fanout"]["woken"] == SMOKE_FANOUT  # the polls went to the partition's leader
    assert body["fanout_client_subscriptions"]["woken"] == SMOKE_FANOUT
    reads = result["consumer_reads"]  # from the leader, whichever node that is
    assert reads["liftlog_rest_arrow"]["records"] == REPLICATED_SMOKE_RECORDS
    assert reads["jetstream_pull_consumer"]["records"] == REPLICATED_SMOKE_RECORDS
    assert body["isr_changes"] == {"shrinks": 0, "expands": 0}


# ------------------------------------------------------------------ benchmark scripts (bench/)
# Each runs as a user runs it (a process of its own, from the repository root), with tiny
# sizes; its temporary files go to a directory of the test's own, so that any process it left
# behind (SeaweedFS, the stack, Spark's JVM or workers) can be found by that directory in its
# environment.

LAKES = ("local", "s3")
SCRIPT_BENCH_TIMEOUT_S = 240
LEFTOVER_TIMEOUT_S = 30.0


def _processes_started_under(tmpdir: Path) -> list[int]:
    """Pids of live processes whose environment names ``tmpdir`` as TMPDIR."""
    marker = f"TMPDIR={tmpdir}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def _run_bench_script(
    tmp_path: Path, script: str, *flags: str, writes_json: bool = True
) -> tuple[dict, str]:
    """Run ``bench/<script>`` with ``flags`` (and ``--json``, unless it writes none); its JSON
    and printed report. Fails when it left a process running or a temporary directory behind."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    out = tmp_path / "results.json"
    argv = [sys.executable, f"bench/{script}", *flags]
    if writes_json:
        argv += ["--json", str(out)]
    done = subprocess.run(
        argv,
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(tmpdir)},
        capture_output=True,
        text=True,
        timeout=SCRIPT_BENCH_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    wait_for(
        lambda: not _processes_started_under(tmpdir),
        timeout_s=LEFTOVER_TIMEOUT_S,
        message=f"every process {script} started to stop",
    )
    assert [p.name for p in tmpdir.glob("liftlog-bench-*")] == []
    return (json.loads(out.read_text()) if writes_json else {}), done.stdout


def _positive_median(figure: dict) -> bool:
    return len(figure["runs"]) == 1 and figure["median"] > 0


@pytest.mark.timeout(SCRIPT_BENCH_TIMEOUT_S + 60)
@pytest.mark.slow
def test_lake_export_bench_reports_both_lakes(tmp_path):
    body, printed = _run_bench_script(
        tmp_path, "lake_export.py", "--records", "4000", "--batch-sizes", "1000,4000", "--runs", "1"
    )
    assert [s["records_per_commit"] for s in body["batch_sizes"]] == [1000, 4000]
    for size in body["batch_sizes"]:
        for lake in LAKES:
            figures = size["lakes"][lake]
            assert _positive_median(figures["records_per_s"]), (lake, figures)
            assert _positive_median(figures["mb_per_s"]), (lake, figures)
            assert figures["commits"] == 4000 // size["records_per_commit"], (lake, figures)
            assert figures["parquet_bytes"] > 0
        assert size["s3_over_local_records_per_s"] > 0
    assert body["peak_rss_mb"]["bench_process"] > 0 and body["peak_rss_mb"]["seaweedfs"] > 0
    assert body["machine"]["cpus"] >= 1
    assert "local lake, median (min..max)" in printed and "S3 lake (SeaweedFS)" in printed


@pytest.mark.slow
@pytest.mark.timeout(SCRIPT_BENCH_TIMEOUT_S + 60)
def test_lake_read_bench_reports_both_lakes_and_the_native_peer(tmp_path):
    body, printed = _run_bench_script(
        tmp_path, "spark_read_lake.py", "--records", "4000", "--runs", "1"
    )
    assert set(body["queries"]) == {"count", "filtered_aggregation"}
    assert body["queries"]["count"]["rows"] == 4000
    assert 0 < body["queries"]["filtered_aggregation"]["rows"] < 4000
    for name, query in body["queries"].items():
        assert {side["lake"] for side in query["sides"].values()} == set(LAKES), name
        for side, figures in query["sides"].items():
            for kind in ("query", "scan"):
                assert _positive_median(figures[kind]["rows_per_s"]), (name, side, kind)
        assert query["s3_over_local"]["query"] > 0 and query["s3_over_local"]["scan"] > 0
    assert body["peak_rss_mb"]["spark_jvm"] > 0 and body["peak_rss_mb"]["seaweedfs"] > 0
    assert "liftlog, S3 lake" in printed and "native Parquet, local files" in printed


@pytest.mark.slow
@pytest.mark.timeout(SCRIPT_BENCH_TIMEOUT_S + 60)
def test_lake_compaction_bench_reports_both_lakes(tmp_path):
    body, printed = _run_bench_script(tmp_path, "compact_s3.py", "--rows", "4000", "--runs", "1")
    assert body["rows_before"] == 4000 and 0 < body["rows_after"] < 4000
    for lake in LAKES:
        figures = body["lakes"][lake]
        for name in ("total_seconds", "compaction_seconds", "rows_per_s"):
            assert _positive_median(figures[name]), (lake, name, figures)
        assert figures["files_added"] > 0 and figures["files_removed"] > 0
    assert body["s3_over_local_seconds"] > 0
    assert body["peak_rss_mb"]["spark_jvm"] > 0 and body["peak_rss_mb"]["seaweedfs"] > 0
    assert "S3 lake (SeaweedFS), median (min..max)" in printed


SECURE_SMOKE_RECORDS = 500
SECURE_SMOKE_SIZE = 1024
SECURE_MODES = ("plain", "secure")
SECURE_FIGURES = (
    "acked_records_per_s",
    "acked_mb_per_s",
    "batch_records_per_s",
    "batch_mb_per_s",
    "latency_p50_ms",
    "latency_p99_ms",
    "batch_latency_p50_ms",
    "batch_latency_p99_ms",
)
SECURE_PRINTED_ROWS = (
    "plain, median (min..max)",
    "--secure, median (min..max)",
    "secure / plain",
    "per-message acked (window 256), records/s",
    "per-message acked, MB/s",
    "producer batches, MB/s",
    "single publish at 1,000/s, ack p50 ms",
    "single publish, ack p99 ms",
    "producer batch, ack p99 ms",
    "acked / stored / lost records (all runs)",
)


def _latency_figures_hold(latency: dict) -> bool:
    return (
        latency["count"] > 0
        and latency["failed"] == 0
        and 0 < latency["p50_ms"] <= latency["p99_ms"] <= latency["max_ms"]
    )


@pytest.mark.timeout(SCRIPT_BENCH_TIMEOUT_S + 60)
@pytest.mark.slow
def test_secure_ingest_bench_reports_both_stacks_and_loses_nothing(tmp_path):
    """``bench/secure_ingest.py`` with tiny counts: both stacks measured (the secured one
    really over HTTPS), every figure in the JSON and in the printed table, every acked record
    in the stream, every process stopped. No timing assertions."""
    body, printed = _run_bench_script(
        tmp_path,
        "secure_ingest.py",
        "--records",
        str(SECURE_SMOKE_RECORDS),
        "--sizes",
        str(SECURE_SMOKE_SIZE),
        "--latency-seconds",
        "0.5",
        "--runs",
        "1",
    )
    assert body["settings"]["runs"] == 1 and body["settings"]["records"] == SECURE_SMOKE_RECORDS
    assert body["stacks"]["secure"]["node-1 api"].startswith("https://")
    assert body["stacks"]["plain"]["node-1 api"].startswith("http://")
    (result,) = body["results"]
    assert result["record_bytes"] == SECURE_SMOKE_SIZE and result["records_per_batch"] > 0
    for mode in SECURE_MODES:
        figures = result["modes"][mode]
        for key in SECURE_FIGURES:
            assert _positive_median(figures["figures"][key]), (mode, key)
        assert figures["failed_records"] == 0, mode
        stored = figures["stored"]
        assert stored["acked"] > 0 and stored["lost"] == 0, (mode, stored)
        assert stored["stored"] >= stored["acked"], (mode, stored)
        (run,) = figures["runs"]
        acked = run["per_message_acked"]
        assert acked["records"] == SECURE_SMOKE_RECORDS, (mode, acked["first_error"])
        assert acked["failed"] == 0, (mode, acked["first_error"])
        batches = run["producer_batches"]
        assert batches["records"] >= SECURE_SMOKE_RECORDS and batches["failed"] == 0, mode
        assert _latency_figures_hold(run["latency"]), (mode, run["latency"])
        assert _latency_figures_hold(run["batch_latency"]), (mode, run["batch_latency"])
        assert body["node_peak_rss_mb"][mode] > 0
    assert all(v is not None and v > 0 for v in result["secure_over_plain"].values())
    for row in SECURE_PRINTED_ROWS:
        assert row in printed, row


LAKE_TIER_SMOKE_RECORDS = 2000


@pytest.mark.slow
@pytest.mark.timeout(SCRIPT_BENCH_TIMEOUT_S + 60)
def test_lake_tier_bench_reads_both_tiers_densely(tmp_path):
    """``bench/lake_tier_read.py`` with tiny counts: the lake range lies below the log start,
    both tiers were read in both encodings (densely: the script checks every offset), every
    figure is in the JSON and the printed table, every process stopped. No timing
    assertions."""
    body, printed = _run_bench_script(
        tmp_path,
        "lake_tier_read.py",
        "--records",
        str(LAKE_TIER_SMOKE_RECORDS),
        "--size",
        "100",
        "--page",
        "500",
        "--runs",
        "1",
    )
    assert body["settings"]["runs"] == 1
    assert body["log_start_offset"] >= LAKE_TIER_SMOKE_RECORDS  # [0, records) is lake-only
    results = body["results"]
    for tier in ("lake", "local"):
        for encoding in ("arrow", "json"):
            figures = results[tier][encoding]
            assert _positive_median(figures["rows_per_s"]), (tier, encoding)
            (run,) = figures["runs"]
            assert run["rows"] == LAKE_TIER_SMOKE_RECORDS, (tier, encoding)
            assert run["value_bytes"] == LAKE_TIER_SMOKE_RECORDS * 100, (tier, encoding)
    assert all(v > 0 for v in results["lake_over_local_rows_per_s"].values())
    for row in ("REST arrow, rows/s", "REST json, rows/s", "lake tier, median (min..max)"):
        assert row in printed, row


@pytest.mark.slow
@pytest.mark.timeout(SCRIPT_BENCH_TIMEOUT_S + 60)
def test_cursor_commit_bench_reports_both_sides(tmp_path):
    """``bench/cursor_commits.py`` with tiny counts: both sides measured, every cursor read
    back with its last acknowledged value, every process stopped. No timing assertions."""
    body, printed = _run_bench_script(
        tmp_path,
        "cursor_commits.py",
        "--nodes",
        "1",
        "--sequential",
        "20",
        "--writers",
        "2",
        "--per-writer",
        "10",
        "--runs",
        "1",
    )
    assert body["not_stored"] == []
    assert body["isr_changes"] == {"shrinks": 0, "expands": 0}  # concurrent commits, healthy ISR
    for side in ("liftlog cursors", "JetStream KV"):
        figures = body["summary"][side]
        for name in ("concurrent_per_s", "per_s", "p50_ms", "p99_ms"):
            assert _positive_median(figures[name]), (side, name)
        assert side in printed


@pytest.mark.slow
@pytest.mark.timeout(SCRIPT_BENCH_TIMEOUT_S + 60)
def test_group_rebalance_bench_times_every_rebalance(tmp_path):
    """``bench/group_rebalance.py`` with tiny counts: a join, a leave and a kill settled, the
    records a kill delivered again equal to those after its last commit, every process
    stopped. No timing assertions."""
    body, printed = _run_bench_script(
        tmp_path, "group_rebalance.py", "--records", "300", "--runs", "1"
    )
    (run,) = body["runs"]
    for rebalance in ("join", "leave", "kill"):
        assert run[rebalance] > 0, rebalance
        assert rebalance in printed
    assert run["equal"] == 1.0 and run["redelivered"] == run["expected"]


@pytest.mark.slow
@pytest.mark.timeout(SCRIPT_BENCH_TIMEOUT_S + 60)
def test_spark_read_bench_reads_the_lake_the_tail_and_the_native_peer(tmp_path):
    """``bench/spark_read.py`` with tiny counts: the liftlog source over the lake and over the
    tail, Spark's Parquet scan of the same files, every figure positive. No timing
    assertions."""
    body, printed = _run_bench_script(
        tmp_path, "spark_read.py", "--records", "4000", "--tail-records", "1000", "--rounds", "1"
    )
    assert body["records"] == 4000 and body["tail_records"] == 1000
    for side in ("liftlog_lake", "native_parquet", "liftlog_tail"):
        for kind in ("query", "scan"):
            assert body[side][kind]["rows_per_s"] > 0, (side, kind)
    assert body["export"]["files"] > 0
    assert "native Parquet scan, same files" in printed


@pytest.mark.slow
@pytest.mark.timeout(SCRIPT_BENCH_TIMEOUT_S + 60)
def test_stream_latency_bench_sees_every_record_in_micro_batches_and_the_lake(tmp_path):
    """``bench/stream_latency.py`` for two seconds: every published record reached a
    micro-batch and the lake figure has its samples. No timing assertions."""
    body, _ = _run_bench_script(tmp_path, "stream_latency.py", "--rate", "10", "--seconds", "2")
    assert body["published"] == 20 and body["seen_in_micro_batches"] == 20
    assert body["micro_batch_visibility_ms"]["p50"] > 0
    assert body["lake_visibility_s"]["samples"]


@pytest.mark.slow
@pytest.mark.timeout(SCRIPT_BENCH_TIMEOUT_S + 60)
def test_reassign_bench_moves_the_partition_under_the_probe(tmp_path):
    """``bench/reassign.py`` with a 2 MB partition: the move finished onto the new replicas and
    the probe publisher was measured before and during it. No timing assertions."""
    body, printed = _run_bench_script(
        tmp_path,
        "reassign.py",
        "--size-mb",
        "2",
        "--runs",
        "1",
        "--throttle",
        "default",
        "--baseline-s",
        "1",
        "--rate",
        "50",
    )
    (run,) = body["variants"]["default"]["runs"]
    assert run["replicas"]["before"] != run["replicas"]["after"]
    assert run["move_s"] > 0 and run["copied_bytes"] > 0
    assert run["before"]["acked_per_s"] > 0
    assert "throttle default" in printed


@pytest.mark.slow
@pytest.mark.timeout(SCRIPT_BENCH_TIMEOUT_S + 60)
def test_ha_recovery_bench_times_both_recoveries(tmp_path):
    """``bench/ha_recovery.py`` once: the NATS and the ZooKeeper recoveries each timed, every
    process stopped. No timing assertions."""
    body, _ = _run_bench_script(tmp_path, "ha_recovery.py", "--runs", "1")
    (run,) = body["runs"]
    assert run["nats_server_loss"]["first_ack_s"] > 0
    assert run["zookeeper_quorum_loss"]["quorum_to_first_create_s"] > 0
    assert run["zookeeper_quorum_loss"]["quorum_to_first_ack_s"] > 0
    assert body["summary"] and body["machine"]["cpus"] >= 1


@pytest.mark.slow
@pytest.mark.timeout(SCRIPT_BENCH_TIMEOUT_S + 60)
def test_log_append_bench_prints_every_figure(tmp_path):
    """``bench/log_append.py`` with a few batches: every line of figures printed."""
    _, printed = _run_bench_script(
        tmp_path, "log_append.py", "--batches", "20", "--flushed-batches", "5", writes_json=False
    )
    for label in ("baseline: bare os.write", "append, no flush", "append + flush() per batch"):
        assert label in printed, label


@pytest.mark.slow
@pytest.mark.timeout(SCRIPT_BENCH_TIMEOUT_S + 60)
def test_compaction_bench_times_the_job_beside_every_baseline(tmp_path):
    """``bench/compaction.py`` with a tiny table: the job and every plain Spark baseline timed
    on the same files, the table compacted to its keys. No timing assertions."""
    body, printed = _run_bench_script(tmp_path, "compaction.py", "--rows", "4000", "--rounds", "1")
    assert body["rows"] == 4000 and 0 < body["rows_after"] < 4000
    assert set(body["rows_per_s"]) == {
        "max_by_struct",
        "row_number_window",
        "max_offset_semi_join",
        "compaction",
    }
    assert all(rate > 0 for rate in body["rows_per_s"].values())
    assert "compaction time / fastest plain aggregation" in printed


@pytest.mark.slow
@pytest.mark.timeout(SCRIPT_BENCH_TIMEOUT_S + 60)
def test_node_memory_bench_reports_every_variant(tmp_path):
    """``bench/node_memory.py`` with a tiny load: idle, peak and settled RSS of each variant,
    the peak never below the idle figure, every process stopped. No size assertions."""
    body, printed = _run_bench_script(
        tmp_path, "node_memory.py", "--mb", "4", "--runs", "1", "--settle-s", "1"
    )
    assert set(body["summary"]) == {"default", "before"}
    for name, runs in body["runs"].items():
        assert len(runs) == 1 and runs[0]["peak_mb"] >= runs[0]["idle_mb"] > 0, (name, runs)
        assert name in printed


LIFTBRIDGE_SMOKE_RECORDS = 500


@pytest.mark.slow
@pytest.mark.timeout(SCRIPT_BENCH_TIMEOUT_S + 60)
def test_liftbridge_api_bench_reports_every_path_and_loses_nothing(tmp_path):
    """``bench/liftbridge_api.py`` with tiny counts: every publish path acked every record,
    every latency and read figure present, nothing lost, every process stopped."""
    body, printed = _run_bench_script(
        tmp_path,
        "liftbridge_api.py",
        "--records",
        str(LIFTBRIDGE_SMOKE_RECORDS),
        "--size",
        "100",
        "--latency-seconds",
        "0.5",
        "--runs",
        "1",
    )
    assert body["lost"] == 0
    (run,) = body["results"]
    for path, figure in run["publish"].items():
        assert figure["records"] == LIFTBRIDGE_SMOKE_RECORDS, (path, figure["first_error"])
        assert figure["failed"] == 0 and figure["records_per_s"] > 0, path
    assert set(run["publish"]) == {"gRPC Publish", "gRPC PublishAsync", "NATS", "REST"}
    for path, latency in run["latency"].items():
        assert _latency_figures_hold(latency), (path, latency)
    for path, figure in run["read"].items():
        assert figure["records"] == LIFTBRIDGE_SMOKE_RECORDS and figure["records_per_s"] > 0, path
    assert "acked records missing from their streams: 0" in printed


TYPED_SMOKE_RECORDS = 300


@pytest.mark.slow
@pytest.mark.timeout(SCRIPT_BENCH_TIMEOUT_S + 60)
def test_typed_publish_bench_reports_every_path_and_loses_nothing(tmp_path):
    """``bench/typed_publish.py`` with tiny counts: every path acked every record, the bound
    streams refused a bad record, both latencies present, nothing lost."""
    body, printed = _run_bench_script(
        tmp_path,
        "typed_publish.py",
        "--records",
        str(TYPED_SMOKE_RECORDS),
        "--latency-seconds",
        "0.5",
        "--runs",
        "1",
    )
    assert body["lost"] == 0
    (run,) = body["results"]
    assert len(run["publish"]) == 4 and len(run["latency"]) == 2
    for path, figure in run["publish"].items():
        assert figure["records"] == TYPED_SMOKE_RECORDS, (path, figure["first_error"])
        assert figure["failed"] == 0 and figure["records_per_s"] > 0, path
    for path, latency in run["latency"].items():
        assert _latency_figures_hold(latency), (path, latency)
    assert set(body["refused_bad_record"].values()) == {"schema_violation"}
    assert "acked records missing from their streams: 0" in printed


TYPED_LAKE_SMOKE_RECORDS = 400


@pytest.mark.slow
@pytest.mark.timeout(SCRIPT_BENCH_TIMEOUT_S + 60)
def test_typed_lake_bench_reports_every_measure_and_loses_nothing(tmp_path: Path) -> None:
    """``bench/typed_lake.py`` with tiny counts: every table holds every record (typed ones
    without an invalid value), every paced record became visible, every Spark side read."""
    body, printed = _run_bench_script(
        tmp_path,
        "typed_lake.py",
        "--records",
        str(TYPED_LAKE_SMOKE_RECORDS),
        "--visible-seconds",
        "0.5",
        "--runs",
        "1",
    )
    assert body["lost"] == {"export": 0, "visible": 0, "invalid_values": 0}
    (run,) = body["results"]
    assert len(run["export"]) == 3
    for path, export in run["export"].items():
        assert export["rows"] == TYPED_LAKE_SMOKE_RECORDS, path
        assert export["export_rows_per_s"] > 0 and export["parquet_bytes"] > 0, path
    visible = run["visible"]
    assert visible["seen"] == visible["sent"] > 0
    assert 0 < visible["p50_ms"] <= visible["p99_ms"] <= visible["max_ms"]
    for figures in (run["spark_query_rows_per_s"], run["spark_scan_rows_per_s"]):
        assert set(figures) == set(run["export"]) and min(figures.values()) > 0
    assert "records missing from their tables: export 0, visible 0" in printed
