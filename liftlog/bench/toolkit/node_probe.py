"""What the benchmark reads from the Liftlog node itself: HW, drop counters, peak RSS.

These are the node's own figures (REST describe, ``/metrics``, ``/proc``), not the
publisher's view, so "recorded" means committed by the leader.
"""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from liftlog.bench.errors import BenchError
from spark_log.api_models import StreamDescription
from spark_log.client.rest import RestClient
from spark_log.errors import LiftlogError

PROBE_TIMEOUT_S = 5.0
SLOW_CONSUMER_METRIC = "liftlog_slow_consumer_drops_total"
_KIB = 1024
_BYTES_PER_MB = 1_000_000


def high_watermark(rest: RestClient, stream: str, partition: int = 0) -> int:
    """The partition's HW from ``GET /v1/streams/{stream}`` (the first uncommitted offset)."""
    described = StreamDescription.from_json(rest.get_json(f"/v1/streams/{stream}"))
    try:
        return described.partition(partition).high_watermark or 0
    except KeyError:
        raise BenchError(f"stream {stream} has no partition {partition}") from None


def slow_consumer_drops(api_url: str, stream: str) -> int:
    """The node's ``liftlog_slow_consumer_drops_total`` summed over the stream's partitions."""
    return int(metric_total(api_url, SLOW_CONSUMER_METRIC, stream=stream))


ISR_SHRINKS_METRIC = "liftlog_isr_shrinks_total"
ISR_EXPANDS_METRIC = "liftlog_isr_expands_total"


def isr_changes(api_urls: list[str]) -> dict[str, int]:
    """ISR shrinks and expands the nodes counted since they started (both 0 on a healthy
    cluster: a benchmark that shrinks an ISR has found a defect, not a cost)."""
    scraped = [node_samples(url) for url in api_urls]
    return {
        "shrinks": int(sum(_total(s, ISR_SHRINKS_METRIC) for s in scraped)),
        "expands": int(sum(_total(s, ISR_EXPANDS_METRIC) for s in scraped)),
    }


def metric_total(api_url: str, name: str, **labels: str) -> float:
    """A metric of the node's ``/metrics`` summed over the series whose labels include
    ``labels`` (0 when it has none)."""
    return _total(node_samples(api_url), name, **labels)


def node_samples(api_url: str) -> list[Sample]:
    """Every sample of the node's ``/metrics``, parsed by Prometheus's own parser."""
    try:
        text = RestClient(api_url, PROBE_TIMEOUT_S).request("GET", "/metrics").body.decode()
    except LiftlogError as exc:
        raise BenchError(f"cannot read {api_url}/metrics: {exc.message}") from exc
    return [s for family in text_string_to_metric_families(text) for s in family.samples]


def _total(samples: list[Sample], name: str, **labels: str) -> float:
    return sum(
        s.value
        for s in samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )


def peak_rss_mb(pid: int) -> float:
    """``VmHWM`` (peak resident set) of a process in MB (10^6 bytes, like the MB/s figures):
    the most memory it ever held."""
    return proc_status_kib(pid, "VmHWM") * _KIB / _BYTES_PER_MB


def proc_status_kib(pid: int, key: str) -> int:
    """A memory figure of ``/proc/<pid>/status`` (``VmRSS``, ``VmHWM``, ...), in KiB."""
    status = Path(f"/proc/{pid}/status")
    try:
        text = status.read_text()
    except OSError as exc:
        raise BenchError(f"cannot read {status}: {exc}") from exc
    match = re.search(rf"^{key}:\s+(\d+) kB$", text, re.M)
    if match is None:
        raise BenchError(f"no {key} in {status}")
    return int(match.group(1))
