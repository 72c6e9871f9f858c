"""``compact_stream``: one compaction of one stream, start to end.

Check that the lake's store makes Delta commits atomic (S3: put-if-absent), plan from a
snapshot, run the Spark job, commit once; when the commit race is lost, start over
from the new snapshot (which usually shows the winner already did the work, so the retry is a
quick no-op), at most ``commit_retries`` times, then stop with CompactionConflictError. Small-file
maintenance follows. ``compact_without_spark`` makes the same plan from the Delta log alone, so
a run with nothing to compute ends before a JVM would start.
"""

from __future__ import annotations

import dataclasses
import time

from pyspark.sql import SparkSession

from datasource.compaction.commit_safety import require_commit_safety
from datasource.compaction.errors import (
    CompactionConflictError,
    CompactionDisabledError,
    UnsupportedLakeError,
)
from datasource.compaction.execute import execute_plan, skipped_results
from datasource.compaction.maintenance import run_maintenance
from datasource.compaction.plan import CompactionPlan, plan_compaction
from datasource.compaction.report import CompactionReport
from datasource.compaction.settings import CompactionOptions, CompactionTarget, Progress
from datasource.session_conf import session_lake_options
from spark_log.errors import LakeError
from spark_log.lake.errors import LakeCommitConflictError
from spark_log.lake.rewrite import RewriteSnapshot
from spark_log.lake.storage import LakeStorage

NOTHING_TO_COMPACT = "nothing to compact"
NO_TABLE = "no lake table yet: nothing to do"


def compact_stream(
    spark: SparkSession,
    target: CompactionTarget,
    options: CompactionOptions | None = None,
    progress: Progress | None = None,
    now_ms: int | None = None,
) -> CompactionReport:
    """Compact ``target``'s lake table; ``now_ms`` fixes the clock tombstones age by (tests).

    The session's ``spark.liftlog.lake.*`` conf fills the lake options ``target`` does not
    set itself (see ``datasource.session_conf``)."""
    options = options or CompactionOptions()
    say = progress or _quiet
    _require_enabled(target, options)
    _require_reachable(target.storage)  # by its scheme: refused before Spark is touched
    target = target.with_session_options(session_lake_options(spark))
    _require_safe_commits(target.storage, say)
    started = time.monotonic()
    attempts = 0
    while True:
        attempts += 1
        report = _attempt(spark, target, options, say, now_ms, attempts)
        if report is not None:
            break
    report = dataclasses.replace(
        report, attempts=attempts, elapsed_s=round(time.monotonic() - started, 3)
    )
    if options.optimize or options.vacuum:
        report = dataclasses.replace(report, maintenance=run_maintenance(target, options, say))
    return report


def compact_without_spark(
    target: CompactionTarget,
    options: CompactionOptions | None = None,
    progress: Progress | None = None,
    now_ms: int | None = None,
) -> CompactionReport | None:
    """The report of a run with nothing to compute, made from the Delta log alone (plan and
    maintenance need no Spark); None when a partition must be computed, or when the table
    cannot be read without the lake options a Spark session's conf may add."""
    options = options or CompactionOptions()
    say = progress or _quiet
    _require_enabled(target, options)
    _require_reachable(target.storage)
    try:
        snapshot = RewriteSnapshot.open(target.storage, target.stream)
        plan = None
        if snapshot is not None:
            plan = plan_compaction(snapshot, target, options, now_ms or _now_ms())
    except LakeError:
        return None
    if plan is not None and not plan.empty:
        return None
    if options.optimize or options.vacuum:
        _require_safe_commits(target.storage, say)
    if plan is None:
        report = CompactionReport(target.stream, target.table_uri, NO_TABLE)
    else:
        _announce(plan, say)
        report = _nothing_to_compact(plan)
    say(f"{report.message}: Spark not started")
    if options.optimize or options.vacuum:
        report = dataclasses.replace(report, maintenance=run_maintenance(target, options, say))
    return report


def _attempt(
    spark: SparkSession,
    target: CompactionTarget,
    options: CompactionOptions,
    say: Progress,
    now_ms: int | None,
    attempt: int,
) -> CompactionReport | None:
    """One try; None when the commit race was lost and a retry is allowed."""
    snapshot = RewriteSnapshot.open(target.storage, target.stream)
    if snapshot is None:
        return CompactionReport(target.stream, target.table_uri, NO_TABLE)
    plan = plan_compaction(snapshot, target, options, now_ms or _now_ms())
    _announce(plan, say)
    if plan.empty:
        return _nothing_to_compact(plan)
    try:
        return execute_plan(spark, snapshot, plan, options, say)
    except LakeCommitConflictError as exc:
        if attempt > options.commit_retries:
            raise CompactionConflictError(
                f"{exc}; this compaction committed nothing (gave up after {attempt} attempts)"
            ) from exc
        say(f"lost the commit race ({exc}); starting again from the new snapshot")
        return None


def _nothing_to_compact(plan: CompactionPlan) -> CompactionReport:
    return CompactionReport(
        plan.target.stream,
        plan.target.table_uri,
        NOTHING_TO_COMPACT,
        read_version=plan.snapshot_version,
        partitions=tuple(skipped_results(plan)),
    )


def _now_ms() -> int:
    return int(time.time() * 1000)


def _announce(plan: CompactionPlan, say: Progress) -> None:
    say(
        f"compacting {plan.target.stream} (table version {plan.snapshot_version}, "
        f"{len(plan.partitions)} of {plan.target.partitions} partition(s) to compute, "
        f"tombstones removed after {_duration(plan.target.delete_retention_ms)})"
    )


def _duration(ms: int) -> str:
    for unit, size in (("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms >= size:
            return f"{ms / size:g}{unit}"
    return f"{ms}ms"


def _require_enabled(target: CompactionTarget, options: CompactionOptions) -> None:
    if not target.compaction_enabled and not options.force:
        raise CompactionDisabledError(
            f"stream {target.stream} was created without compaction; create streams with "
            "--compaction, or pass --force to compact this one anyway"
        )


def _require_reachable(storage: LakeStorage) -> None:
    """Refuse, before Spark starts, a lake pyarrow has no filesystem for: the job's tasks
    read and write every file through it."""
    try:
        storage.filesystem()
    except LakeError as exc:
        raise UnsupportedLakeError(
            f"cannot compact {storage.uri}: {exc.message} (compaction reads and writes lake "
            "files through pyarrow's filesystems: local paths, file://, s3://, gs://, abfss://)"
        ) from exc


def _require_safe_commits(storage: LakeStorage, say: Progress) -> None:
    """Once per run, before Spark starts: an S3 store must enforce put-if-absent, or the
    compaction's commit could silently replace an export's (see ``commit_safety.py``)."""
    if storage.is_s3:
        say(f"checking that {storage.uri} enforces put-if-absent for Delta commits")
    require_commit_safety(storage)


def _quiet(_line: str) -> None:
    """The default progress sink: say nothing."""
