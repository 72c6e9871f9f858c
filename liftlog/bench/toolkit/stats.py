"""The figures a measurement produces: throughput and latency, with units in the names."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from liftlog.bench.toolkit.json_object import JsonObject

BYTES_PER_MB = 1_000_000


@dataclass(frozen=True)
class Throughput:
    """``records`` of ``record_bytes`` each acknowledged (or recorded) in ``seconds``."""

    records: int
    record_bytes: int
    seconds: float
    failed: int = 0
    first_error: str | None = None
    # % of one core used by each process while this was measured (see cpu.CpuMeter).
    cpu_percent: dict[str, float] = field(default_factory=dict)

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0

    @property
    def mb_per_s(self) -> float:
        """Payload megabytes (10^6 bytes) per second: headers and framing are not counted."""
        return self.records_per_s * self.record_bytes / BYTES_PER_MB

    def to_json(self) -> JsonObject:
        return {
            "records": self.records,
            "failed": self.failed,
            "seconds": round(self.seconds, 4),
            "records_per_s": round(self.records_per_s, 1),
            "mb_per_s": round(self.mb_per_s, 3),
            "first_error": self.first_error,
            "cpu_percent": self.cpu_percent,
        }


@dataclass(frozen=True)
class Latency:
    """Publish → ack latency percentiles of ``count`` acknowledged messages."""

    count: int
    failed: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    rate_per_s: int
    cpu_percent: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_samples(
        cls,
        samples_s: Sequence[float],
        failed: int,
        rate_per_s: int,
        cpu_percent: dict[str, float] | None = None,
    ) -> Latency:
        ordered = sorted(samples_s)
        return cls(
            count=len(ordered),
            failed=failed,
            p50_ms=percentile(ordered, 50) * 1000,
            p99_ms=percentile(ordered, 99) * 1000,
            max_ms=(ordered[-1] if ordered else 0.0) * 1000,
            rate_per_s=rate_per_s,
            cpu_percent=dict(cpu_percent or {}),
        )

    def to_json(self) -> JsonObject:
        return {
            "count": self.count,
            "failed": self.failed,
            "rate_per_s": self.rate_per_s,
            "p50_ms": round(self.p50_ms, 3),
            "p99_ms": round(self.p99_ms, 3),
            "max_ms": round(self.max_ms, 3),
            "cpu_percent": self.cpu_percent,
        }


def percentile(ordered: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of sorted values (0.0 for none): a value that was observed."""
    if not ordered:
        return 0.0
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]
