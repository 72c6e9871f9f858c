"""CPU seconds Spark spent on a query: the driver JVM and every Python worker under it.

On a shared 2-core machine wall time swings with whatever else runs (the same scan took 9 s
and 27 s in one run); the CPU a query consumed barely does. A Python source runs on both the
JVM and Python workers, so both are counted: each process's own user + system time, plus the
time of children it has already reaped (planner workers that exited).
"""

from __future__ import annotations

import os
from pathlib import Path

from pyspark.sql import SparkSession

from liftlog.bench.errors import BenchError

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# After the ")" of the command name: ppid is field 1, utime 11, stime 12, cutime 13, cstime 14.
_PPID, _UTIME, _STIME, _CUTIME, _CSTIME = 1, 11, 12, 13, 14


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields is not None:
                tree.setdefault(int(fields[_PPID]), []).append(int(entry.name))
    return tree


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds of ``root`` and all its live descendants (and of children they reaped)."""
    tree = _children()
    total, pending = 0, [root]
    while pending:
        pid = pending.pop()
        fields = _stat(pid)
        if fields is not None:
            total += sum(int(fields[i]) for i in (_UTIME, _STIME, _CUTIME, _CSTIME))
        pending.extend(tree.get(pid, []))
    return total / _CLOCK_TICKS


def jvm_pid(spark: SparkSession) -> int:
    """The pid of a session's driver JVM: the root of the process tree a query runs in."""
    jvm = spark.sparkContext._jvm  # py4j's gateway view: untyped, hence Any below
    if jvm is None:
        raise BenchError("the Spark session has no JVM gateway")
    return int(jvm.java.lang.ProcessHandle.current().pid())
