"""Slow-consumer drops: every drop counted, at most one log line a second (manual clock)."""

from __future__ import annotations

from ingest.metrics import NodeMetrics
from ingest.produce.subscription import PartitionSubscription
from spark_log.config import IngestConfig
from spark_log.stream_spec import StreamSpec
from tests.unit.ingest.conftest import ManualClock


async def _ignore(msg: object) -> None:
    raise AssertionError("no message is delivered in this test")


def test_drops_are_all_counted_but_logged_once_a_second(clock: ManualClock):
    metrics = NodeMetrics()
    spec = StreamSpec(name="s", subject="s.in")
    sub = PartitionSubscription(spec, 0, IngestConfig(), metrics, clock, _ignore)
    assert not sub.active and not sub.owns(None) and not sub.owns(object())
    assert sub.count_slow_consumer_drop() is True
    assert sub.count_slow_consumer_drop() is False
    clock.advance(999)
    assert sub.count_slow_consumer_drop() is False
    clock.advance(1)
    assert sub.count_slow_consumer_drop() is True
    assert sub.slow_consumer_drops == 4
    sample = metrics.registry.get_sample_value(
        "liftlog_slow_consumer_drops_total", {"stream": "s", "partition": "0"}
    )
    assert sample == 4.0
