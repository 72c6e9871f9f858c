"""The event-loop histogram renders as a Prometheus histogram a scraper can read."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from ingest.histogram import LoopHistogram


def _samples(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_buckets_are_cumulative_with_sum_and_count() -> None:
    registry = CollectorRegistry()
    hist = LoopHistogram("t_seconds", "doc", ("stream",), registry, buckets=(0.001, 0.01))
    child = hist.labels("s")
    for value in (0.0005, 0.001, 0.005, 0.5):
        child.observe(value)
    samples = _samples(registry)

    def bucket(le: str) -> float:
        return samples[("t_seconds_bucket", (("le", le), ("stream", "s")))]

    assert bucket("0.001") == 2  # a value on a bound counts in that bound's bucket
    assert bucket("0.01") == 3
    assert bucket("+Inf") == 4
    assert samples[("t_seconds_count", (("stream", "s"),))] == 4
    assert samples[("t_seconds_sum", (("stream", "s"),))] == pytest.approx(0.5065)


def test_label_sets_are_apart_and_removable() -> None:
    registry = CollectorRegistry()
    hist = LoopHistogram("t_seconds", "doc", ("stream",), registry)
    hist.labels("a").observe(1.0)
    hist.labels("b").observe(2.0)
    hist.remove("a")
    names = {labels for name, labels in _samples(registry) if name == "t_seconds_count"}
    assert names == {(("stream", "b"),)}


def test_wrong_label_count_is_refused() -> None:
    hist = LoopHistogram("t_seconds", "doc", ("stream",), CollectorRegistry())
    with pytest.raises(ValueError, match="takes labels"):
        hist.labels("a", "b")
