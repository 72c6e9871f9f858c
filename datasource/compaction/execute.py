"""One attempt at a planned compaction: the Spark job, the per-partition verdict, the commit.

A partition whose output has as many rows as its input lost nothing (output rows are a subset
of input rows), so its files stay as they are: a compaction commits only partitions it
actually shrank, and a run that shrinks none commits nothing at all.
"""

from __future__ import annotations

from py4j.protocol import Py4JError
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from datasource.compaction.commit import commit_compaction
from datasource.compaction.errors import CompactionError
from datasource.compaction.job import (
    JobOutput,
    PartitionOutput,
    TombstoneCounts,
    run_compaction_job,
)
from datasource.compaction.plan import CompactionPlan, PartitionPlan
from datasource.compaction.report import (
    COMPACTED,
    SKIPPED,
    UNCHANGED,
    CompactionReport,
    PartitionResult,
)
from datasource.compaction.settings import CompactionOptions, Progress
from spark_log.errors import LakeError
from spark_log.lake.errors import LakeCommitConflictError
from spark_log.lake.new_file import NewFile, discard
from spark_log.lake.rewrite import RewriteSnapshot, TableFile


def execute_plan(
    spark: SparkSession,
    snapshot: RewriteSnapshot,
    plan: CompactionPlan,
    options: CompactionOptions,
    progress: Progress,
) -> CompactionReport:
    """Run the job and commit; LakeCommitConflictError when the commit race is lost (the
    files this attempt wrote are deleted again, nothing of it remains)."""
    storage = snapshot.storage
    output = _run_spark(spark, snapshot, plan, options, progress)
    results: list[PartitionResult] = []
    removed: list[TableFile] = []
    added: list[NewFile] = []
    for p in plan.partitions:
        result = _settle_partition(p, output.partitions[p.partition])
        results.append(result)
        if result.status == COMPACTED:
            removed.extend(p.files)
            added.extend(output.partitions[p.partition].files)
    if not removed:
        return _report(plan, results, output.tombstones, None, "nothing to remove; no commit")
    progress(f"committing: {len(removed)} file(s) out, {len(added)} in")
    try:
        version = commit_compaction(snapshot, plan, results, removed, added, output.tombstones)
    except LakeCommitConflictError:
        discard(storage, added)
        raise
    return _report(plan, results, output.tombstones, version, f"committed table version {version}")


def _run_spark(
    spark: SparkSession,
    snapshot: RewriteSnapshot,
    plan: CompactionPlan,
    options: CompactionOptions,
    progress: Progress,
) -> JobOutput:
    progress(
        f"Spark: reading {len(plan.files)} file(s) of {len(plan.partitions)} partition(s) "
        f"from table version {plan.snapshot_version}"
    )
    try:
        return run_compaction_job(
            spark,
            plan,
            snapshot.storage,
            options.max_records_per_file,
            snapshot.file_schema(),
        )
    except (PySparkException, Py4JError, LakeError) as exc:
        raise CompactionError(f"the compaction job of {plan.target.stream} failed: {exc}") from exc


def _settle_partition(p: PartitionPlan, output: PartitionOutput) -> PartitionResult:
    """Compacted when the partition lost rows (its new files replace the ones read);
    unchanged otherwise (the rewrite task already deleted what it wrote)."""
    if output.rows_out >= output.rows_in:
        return PartitionResult(p.partition, UNCHANGED, p.boundary, output.rows_in, output.rows_out)
    return PartitionResult(
        p.partition,
        COMPACTED,
        p.boundary,
        output.rows_in,
        output.rows_out,
        files_removed=len(p.files),
        files_added=len(output.files),
    )


def _report(
    plan: CompactionPlan,
    results: list[PartitionResult],
    tombstones: TombstoneCounts,
    version: int | None,
    message: str,
) -> CompactionReport:
    return CompactionReport(
        stream=plan.target.stream,
        table_uri=plan.target.table_uri,
        message=message,
        read_version=plan.snapshot_version,
        committed_version=version,
        run_id=plan.run_id if version is not None else None,
        partitions=tuple(sorted([*results, *skipped_results(plan)], key=lambda r: r.partition)),
        tombstones_removed=tombstones.removed if version is not None else 0,
    )


def skipped_results(plan: CompactionPlan) -> list[PartitionResult]:
    """The partitions the plan left alone, as report lines."""
    return [
        PartitionResult(s.partition, SKIPPED, s.boundary, reason=s.reason) for s in plan.skipped
    ]
