"""CPU used by each process during a measurement, from ``/proc/<pid>/stat``.

On a 2-core machine a figure means little without knowing who was busy: a side that is slow
while every process idles is latency-bound (waiting on a hop or an fsync), one whose process
sits at 100% of a core is CPU-bound. The meter makes that visible in every result.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# Fields 14 and 15 of /proc/<pid>/stat (utime, stime), counted after the ")" of the name.
_UTIME_FIELD = 11
_STIME_FIELD = 12


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of ``pid`` (all its threads); None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return (int(fields[_UTIME_FIELD]) + int(fields[_STIME_FIELD])) / _CLOCK_TICKS


class CpuMeter:
    """``with CpuMeter({"node": pid, ...}) as cpu: ...`` then ``cpu.percent``: % of one core."""

    def __init__(self, pids: Mapping[str, int]) -> None:
        self._pids = dict(pids)
        self._start: dict[str, float | None] = {}
        self._t0 = 0.0
        self.percent: dict[str, float] = {}

    def __enter__(self) -> CpuMeter:
        self._start = {name: cpu_seconds(pid) for name, pid in self._pids.items()}
        self._t0 = time.monotonic()
        return self

    def __exit__(self, *_exc: object) -> None:
        wall = time.monotonic() - self._t0
        for name, pid in self._pids.items():
            before, after = self._start.get(name), cpu_seconds(pid)
            if before is not None and after is not None and wall > 0:
                self.percent[name] = round(100 * (after - before) / wall, 1)
