"""A figure measured over several runs: every run's value, the median and the spread.

A single run on a shared machine says little, and a best run flatters; the median with the
lowest and highest run beside it shows both the figure and how far to trust it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from liftlog.bench.errors import BenchError
from liftlog.bench.toolkit.json_object import JsonObject
from liftlog.bench.toolkit.table import num


@dataclass(frozen=True)
class Spread:
    """The values of one figure, one per run, in run order."""

    runs: tuple[float, ...]

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        if not values:
            raise BenchError("a figure needs at least one run")
        return cls(tuple(float(v) for v in values))

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    @property
    def low(self) -> float:
        return min(self.runs)

    @property
    def high(self) -> float:
        return max(self.runs)

    def to_json(self, decimals: int = 3) -> JsonObject:
        return {
            "runs": [round(v, decimals) for v in self.runs],
            "median": round(self.median, decimals),
            "min": round(self.low, decimals),
            "max": round(self.high, decimals),
        }

    def render(self, decimals: int = 0) -> str:
        """``12,345 (11,002..13,870)``: the median, then the lowest and highest run."""
        return (
            f"{num(self.median, decimals)} ({num(self.low, decimals)}..{num(self.high, decimals)})"
        )

    def render_runs(self, decimals: int = 0) -> str:
        """``11,002 / 12,345 / 13,870``: every run, in run order."""
        return " / ".join(num(v, decimals) for v in self.runs)


def ratio(numerator: Spread, denominator: Spread) -> float | None:
    """Median over median (None when the denominator's median is zero)."""
    return numerator.median / denominator.median if denominator.median else None
