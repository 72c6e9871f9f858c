"""Two compactions of one table started at once: the race both lakes' tests run."""

from __future__ import annotations

import threading
from typing import Any

from datasource.compaction import CompactionOptions, CompactionTarget, compact_stream
from spark_log.errors import LiftlogError

# no packing or vacuum: the races look at the compaction commit alone
QUIET = CompactionOptions(optimize=False, vacuum=False)


def compact_twice_at_once(
    spark: Any, target: CompactionTarget, join_timeout_s: float
) -> tuple[list[Any], list[LiftlogError]]:
    """Run two ``compact_stream`` calls on threads; their reports and their typed failures."""
    reports: list[Any] = []
    failures: list[LiftlogError] = []

    def compact() -> None:
        try:
            reports.append(compact_stream(spark, target, QUIET))
        except LiftlogError as exc:
            failures.append(exc)

    threads = [threading.Thread(target=compact) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(join_timeout_s)
    return reports, failures
