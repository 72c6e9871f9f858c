"""``liftlog bench`` end to end with a tiny record count: every figure present, nothing lost.

No timing assertions (the benchmark prints numbers, it does not assert them); this only
checks that each measurement ran, produced positive figures, lost no record and stopped
every process it started.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from liftlog.bench.runner import run_bench
from liftlog.embedded.process import live_children

SMOKE_RECORDS = 2000
SMOKE_SIZE = 100
SIDES = ("liftlog", "jetstream", "jetstream_sync_always")

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, list]:
    """One smoke run for the module; also the children it left behind (should be none)."""
    before = set(live_children())  # other fixtures' servers may be running in this session
    out = tmp_path_factory.mktemp("bench") / "results.json"
    assert run_bench(records=SMOKE_RECORDS, sizes=[SMOKE_SIZE], json_path=out) == 0
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


def test_node_rss_and_targets(bench_json):
    assert bench_json["node_peak_rss_mb"] > 0
    assert bench_json["machine"]["cpus"] >= 1
    targets = bench_json["targets"]
    assert targets and all(isinstance(t["met"], bool) for t in targets)


REPLICATED_SMOKE_RECORDS = 500
REPLICATED_SIDES = ("liftlog_rf3", "jetstream_r3")


@pytest.mark.timeout(90)
def test_replicated_mode_reports_every_figure_and_loses_nothing(tmp_path):
    """``--replication 3`` with tiny counts: both sides measured, every acked record stored
    on all three replicas, every process stopped. No timing assertions."""
    before = set(live_children())
    out = tmp_path / "results-rf3.json"
    assert (
        run_bench(
            records=REPLICATED_SMOKE_RECORDS, sizes=[SMOKE_SIZE], json_path=out, replication=3
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
    assert sorted(body["node_peak_rss_mb"]) == ["node-1", "node-2", "node-3"]
    assert body["targets"] and all(isinstance(t["met"], bool) for t in body["targets"])
