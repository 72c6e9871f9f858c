"""The JSON of both line-ups: the shared acked figures, and what only one of them measures."""

from __future__ import annotations

from tests.support.bench_results import replicated_result, single_node_result


def test_single_node_json_has_fire_and_forget_and_one_rss_figure() -> None:
    body = single_node_result().to_json([])
    (size,) = body["results"]
    assert set(size) == {
        "record_bytes",
        "per_message_acked",
        "per_message_ratio_liftlog_to_jetstream",
        "producer_batches",
        "latency",
        "fire_and_forget",
    }
    assert size["producer_batches"]["liftlog"]["records"] == 40_000
    assert size["per_message_acked"]["liftlog"]["rounds_records_per_s"] == [1000.0] * 3
    assert body["node_peak_rss_mb"] == 123.4
    assert "replicas" not in body


def test_replicated_json_has_stored_checks_leaders_and_rss_by_node() -> None:
    body = replicated_result().to_json([])
    (size,) = body["results"]
    assert "fire_and_forget" not in size
    assert size["stored"]["jetstream_r3"]["lost"] == 10
    assert size["leaders_at_start"] == {"liftlog_rf3": "node-2", "jetstream_r3": "bench-r3-3"}
    assert size["producer_batches"]["liftlog_rf3"]["records"] == 27_000
    assert size["per_message_ratio_liftlog_to_jetstream"] == 1.0
    assert body["node_peak_rss_mb"] == {"node-1": 100.0, "node-2": 110.0, "node-3": 320.0}
    assert body["replicas"]["jetstream_r3"] == ["bench-r3-1", "bench-r3-2", "bench-r3-3"]
