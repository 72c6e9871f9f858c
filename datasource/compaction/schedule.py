"""``liftlog compact --watch``: compact each stream whose ``compaction_interval_s`` elapsed.

The schedule runs in that one long-running process (with its SparkSession), never in the
ingest nodes, which stay free of Spark and of the JVM memory it needs. When a stream was last
compacted is read from its table (the compaction app transaction's run id is the commit time),
not from this process's memory, so a restarted scheduler waits out the interval instead of
compacting everything again at once. Runs that commit nothing (nothing new) leave no trace in
the table; for those the process remembers when it looked, and looks again an interval later.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pyspark.sql import SparkSession

from datasource.compaction.report import CompactionReport
from datasource.compaction.runner import compact_stream
from datasource.compaction.settings import CompactionOptions, CompactionTarget, Progress
from datasource.compaction.target import describe_target, scheduled_streams
from datasource.session_conf import session_lake_options
from spark_log.client.rest import RestClient
from spark_log.errors import LiftlogError
from spark_log.lake.compaction_state import compaction_app_id
from spark_log.lake.rewrite import RewriteSnapshot

DEFAULT_WATCH_POLL_S = 30.0
"""How often the scheduler looks for new streams and elapsed intervals (at most)."""
MIN_WAIT_S = 0.5


@dataclass
class TickResult:
    """What one look at the streams did."""

    reports: list[CompactionReport] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    next_due_s: float | None = None


class CompactionSchedule:
    def __init__(
        self,
        spark: SparkSession,
        client: RestClient,
        options: CompactionOptions,
        progress: Progress,
        only_stream: str | None = None,
        clock: Callable[[], float] = time.time,
        lake_options: Mapping[str, str] | None = None,
    ) -> None:
        self._spark = spark
        self._client = client
        self._options = options
        self._say = progress
        self._only = only_stream
        self._clock = clock
        self._looked_ms: dict[str, int] = {}
        self._lake_options = dict(lake_options or {})

    def tick(self) -> TickResult:
        """Compact every scheduled stream that is due; say when the next one will be."""
        result = TickResult()
        names = [self._only] if self._only else scheduled_streams(self._client)
        for name in names:
            try:
                self._visit(name, result)
            except LiftlogError as exc:
                self._looked_ms[name] = self._now_ms()
                result.errors[name] = f"{exc.code}: {exc.message}"
                self._say(f"{name}: {exc.code}: {exc.message}")
        return result

    def run(
        self,
        stop: threading.Event,
        poll_s: float = DEFAULT_WATCH_POLL_S,
        on_tick: Callable[[TickResult], None] | None = None,
    ) -> None:
        """Tick until ``stop`` is set, sleeping until the next stream is due (at most poll_s)."""
        while not stop.is_set():
            result = self.tick()
            if on_tick is not None:
                on_tick(result)
            wait = poll_s if result.next_due_s is None else min(poll_s, result.next_due_s)
            stop.wait(max(MIN_WAIT_S, wait))

    def _visit(self, name: str, result: TickResult) -> None:
        target = describe_target(self._client, name, self._lake_options).with_session_options(
            session_lake_options(self._spark)
        )
        interval_s = target.compaction_interval_s
        if not target.compaction_enabled or not interval_s:
            return
        wait_s = self.due_in_s(target, last_compaction_ms(target), self._now_ms())
        if wait_s > 0:
            result.next_due_s = _min(result.next_due_s, wait_s)
            return
        self._say(f"{name}: compaction due (every {interval_s:g}s)")
        report = compact_stream(self._spark, target, self._options, self._say)
        self._looked_ms[name] = self._now_ms()
        self._say(f"{name}: {report.message}")
        result.reports.append(report)
        result.next_due_s = _min(result.next_due_s, interval_s)

    def due_in_s(self, target: CompactionTarget, last_run_ms: int | None, now_ms: int) -> float:
        """Seconds until ``target`` is due (<= 0: now), from the table's last compaction and
        the last time this process looked."""
        interval_ms = int((target.compaction_interval_s or 0) * 1000)
        last = max(last_run_ms or 0, self._looked_ms.get(target.stream, 0))
        if last == 0:
            return 0.0
        return (last + interval_ms - now_ms) / 1000

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)


def last_compaction_ms(target: CompactionTarget) -> int | None:
    """When the table was last compacted (the run id of its last compaction commit)."""
    snapshot = RewriteSnapshot.open(target.storage, target.stream)
    if snapshot is None:
        return None
    return snapshot.transaction_version(compaction_app_id(target.stream))


def _min(a: float | None, b: float) -> float:
    return b if a is None else min(a, b)
