"""Slow-consumer drops: every drop counted, at most one log line a second (manual clock)."""

from __future__ import annotations

from ingest.metrics import NodeMetrics
from ingest.produce.nats_frames import InboundMessage
from ingest.produce.subscription import PartitionSubscription
from spark_log.config import IngestConfig
from spark_log.stream_spec import StreamSpec
from tests.unit.ingest.conftest import ManualClock, RecordingIntake


def _ignore(messages: list[InboundMessage]) -> int:
    raise AssertionError("no message is delivered in this test")


def _drops(metrics: NodeMetrics) -> float | None:
    return metrics.registry.get_sample_value(
        "liftlog_slow_consumer_drops_total", {"stream": "s", "partition": "0"}
    )


def test_drops_are_all_counted_but_logged_once_a_second(clock: ManualClock):
    metrics = NodeMetrics()
    spec = StreamSpec(name="s", subject="s.in")
    sub = PartitionSubscription(spec, 0, IngestConfig(), metrics, clock, _ignore)
    assert not sub.active
    assert sub.count_slow_consumer_drop() is True
    assert sub.count_slow_consumer_drop() is False
    clock.advance(999)
    assert sub.count_slow_consumer_drop(2) is False
    clock.advance(1)
    assert sub.count_slow_consumer_drop() is True
    assert sub.slow_consumer_drops == 5
    assert _drops(metrics) == 5.0


def test_the_subscription_counts_what_the_write_path_had_no_room_for(clock: ManualClock):
    metrics = NodeMetrics()
    spec = StreamSpec(name="s", subject="s.in")
    delivered: list[list[InboundMessage]] = []

    def sink(messages: list[InboundMessage]) -> int:
        delivered.append(messages)
        return len(messages) - 1  # room for one only

    intake = RecordingIntake()
    sub = PartitionSubscription(spec, 0, IngestConfig(), metrics, clock, sink)
    sub.subscribe(intake)
    sub.subscribe(intake)  # idempotent
    assert sub.active and list(intake.subjects.values()) == [spec.partition_subject(0)]
    messages = [InboundMessage(1, "s.in", "", b"v", None) for _ in range(3)]
    sub._deliver(messages)
    assert delivered == [messages] and _drops(metrics) == 2.0
    sub.unsubscribe()
    assert not sub.active and intake.subjects == {}
