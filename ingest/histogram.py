"""Latency histograms for the node's hot paths, observed on the event loop alone.

prometheus_client's ``Histogram`` takes a lock for its sum and for its bucket on every
observation (about 1.2 µs here); an acknowledged publish is observed once per record, so at
tens of thousands of records a second those locks would cost the produce path a few percent.
Everything that observes these histograms runs on the node's one event loop (a duration
measured in a worker thread is handed back to the loop first), and so does the scrape, so a
plain list of counts per label set is enough (about 0.2 µs an observation). The scrape turns
the counts into Prometheus's cumulative buckets.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence

from prometheus_client.metrics_core import HistogramMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

LATENCY_BUCKETS_S: tuple[float, ...] = (
    0.0005,
    0.001,
    0.002,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
"""From half a millisecond (a light-load ack) to ten seconds (a long-poll or a stuck fsync)."""


class HistogramChild:
    """One label set's counts; ``observe`` is the hot call."""

    __slots__ = ("_bounds", "counts", "total")

    def __init__(self, bounds: Sequence[float]) -> None:
        self._bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last: above every bound (+Inf)
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(self._bounds, seconds)] += 1
        self.total += seconds


class LoopHistogram(Collector):
    """A labelled histogram in Prometheus's text format, for event-loop code only."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        registry: CollectorRegistry,
        buckets: Sequence[float] = LATENCY_BUCKETS_S,
    ) -> None:
        self._name = name
        self._documentation = documentation
        self._labelnames = tuple(labelnames)
        self._bounds = tuple(sorted(buckets))
        self._children: dict[tuple[str, ...], HistogramChild] = {}
        registry.register(self)

    def labels(self, *values: str) -> HistogramChild:
        """The child for these label values (created on first use; keep it for hot paths)."""
        if len(values) != len(self._labelnames):
            raise ValueError(f"{self._name} takes labels {self._labelnames}, got {values}")
        child = self._children.get(values)
        if child is None:
            child = self._children[values] = HistogramChild(self._bounds)
        return child

    def remove(self, *values: str) -> None:
        """Forget a label set (a partition this node no longer serves)."""
        self._children.pop(values, None)

    def describe(self) -> Iterator[Metric]:
        yield HistogramMetricFamily(self._name, self._documentation, labels=self._labelnames)

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self._name, self._documentation, labels=self._labelnames)
        for values, child in list(self._children.items()):
            family.add_metric(list(values), self._cumulative(child), child.total)
        yield family

    def _cumulative(self, child: HistogramChild) -> list[tuple[str, float]]:
        buckets: list[tuple[str, float]] = []
        running = 0
        for bound, count in zip((*self._bounds, float("inf")), child.counts, strict=True):
            running += count
            buckets.append(("+Inf" if bound == float("inf") else repr(bound), running))
        return buckets
