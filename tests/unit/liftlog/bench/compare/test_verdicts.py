"""The targets of both line-ups, named after the sides they compare."""

from __future__ import annotations

from liftlog.bench.compare.lineup import REPLICATED, SINGLE_NODE
from liftlog.bench.compare.verdicts import verdicts
from tests.support.bench_results import replicated_result, single_node_result


def test_single_node_targets() -> None:
    found = {v.target: v for v in verdicts(single_node_result(), SINGLE_NODE)}
    assert list(found) == [
        "per-message acked >= JetStream per-message",
        "producer batches >= 10x JetStream per-message",
        "fire-and-forget >= 0.5x bare subscriber",
        "fire-and-forget: zero drops",
        "node peak RSS < 300 MB",
    ]
    assert found["producer batches >= 10x JetStream per-message"].value == "40.0x"
    assert all(v.met for v in found.values())


def test_replicated_targets_hold_every_replica_to_the_acked_count() -> None:
    found = {v.target: v for v in verdicts(replicated_result(), REPLICATED)}
    assert list(found) == [
        "RF=3 per-message acked >= JetStream R3 per-message",
        "RF=3 producer batches >= 10x JetStream R3 per-message",
        "p99 publish->ack at 500 msg/s reported (Liftlog / JS)",
        "no acked record lost, every replica holds all",
        "node peak RSS < 300 MB (largest of 3)",
    ]
    lost = found["no acked record lost, every replica holds all"]
    assert (lost.value, lost.met) == ("10 lost", False)
    rss = found["node peak RSS < 300 MB (largest of 3)"]
    assert (rss.value, rss.met) == ("320 MB", False)
