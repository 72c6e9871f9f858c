"""Read a node's ``/metrics`` the way Prometheus does, for tests and benchmarks."""

from __future__ import annotations

import httpx
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

Samples = dict[str, list[tuple[dict[str, str], float]]]
"""Sample name -> (labels, value) of each of its series."""


def _parsed(api: httpx.Client) -> list[Metric]:
    """The families of a node's ``/metrics`` now, parsed by Prometheus's own parser."""
    text = api.get("/metrics").raise_for_status().text
    return list(text_string_to_metric_families(text))


def scrape(api: httpx.Client) -> Samples:
    """Every sample a node's ``/metrics`` shows now (``api``: a client of that node)."""
    samples: Samples = {}
    for family in _parsed(api):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum of ``name`` over the series whose labels include ``labels`` (0 when none)."""
    return sum(
        value
        for series, value in samples.get(name, [])
        if all(series.get(k) == v for k, v in labels.items())
    )


def families(api: httpx.Client) -> set[str]:
    """The names of the metric families a node exports (series or not yet)."""
    return {family.name for family in _parsed(api)}
