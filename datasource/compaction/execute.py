"""One attempt at a planned compaction: the Spark job, the per-partition verdict, the commit.

A partition whose output has as many rows as its input lost nothing (output rows are a subset
of input rows), so its files stay as they are: a compaction commits only partitions it
actually shrank, and a run that shrinks none commits nothing at all.
"""

from __future__ import annotations

from pathlib import Path

from py4j.protocol import Py4JError
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from datasource.compaction.commit import commit_compaction
from datasource.compaction.errors import CompactionError
from datasource.compaction.job import (
    TombstoneCounts,
    compacted_frame,
    read_lake_files,
    write_compacted,
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
from datasource.compaction.staging import (
    StagedFile,
    new_staging_dir,
    place,
    remove_staging,
    staged_files,
)
from spark_log.lake.errors import LakeCommitConflictError
from spark_log.lake.rewrite import NewFile, RewriteSnapshot, TableFile, discard


def execute_plan(
    spark: SparkSession,
    snapshot: RewriteSnapshot,
    plan: CompactionPlan,
    root: Path,
    options: CompactionOptions,
    progress: Progress,
) -> CompactionReport:
    """Run the job and commit; LakeCommitConflictError when the commit race is lost (the
    files this attempt placed are deleted again, nothing of it remains)."""
    staging = new_staging_dir(root, plan.run_id)
    placed: list[NewFile] = []
    try:
        tombstones = _run_spark(spark, plan, staging, options, progress)
        staged = staged_files(staging)
        results: list[PartitionResult] = []
        removed: list[TableFile] = []
        for p in plan.partitions:
            result, files = _settle_partition(p, staged.get(p.partition, []), root, plan.run_id)
            results.append(result)
            placed.extend(files)
            if result.status == COMPACTED:
                removed.extend(p.files)
        if not removed:
            return _report(plan, results, tombstones, None, "nothing to remove; no commit")
        progress(f"committing: {len(removed)} file(s) out, {len(placed)} in")
        version = commit_compaction(snapshot, plan, results, removed, placed, tombstones)
    except LakeCommitConflictError:
        discard(root, placed)
        raise
    finally:
        remove_staging(staging)
    return _report(plan, results, tombstones, version, f"committed table version {version}")


def _run_spark(
    spark: SparkSession,
    plan: CompactionPlan,
    staging: Path,
    options: CompactionOptions,
    progress: Progress,
) -> TombstoneCounts:
    files = plan.files
    progress(
        f"Spark: reading {len(files)} file(s) of {len(plan.partitions)} partition(s) "
        f"from table version {plan.snapshot_version}"
    )
    try:
        source = read_lake_files(spark, plan.target.table_uri, [f.location for f in files])
        compacted = compacted_frame(source, plan.boundary_offset, plan.tombstone_cutoff_ms)
        try:
            write_compacted(
                compacted.frame, str(staging), len(plan.partitions), options.max_records_per_file
            )
            return compacted.metrics.tombstones()
        finally:
            compacted.release()
    except (PySparkException, Py4JError) as exc:
        raise CompactionError(f"the compaction job of {plan.target.stream} failed: {exc}") from exc


def _settle_partition(
    p: PartitionPlan, staged: list[StagedFile], root: Path, run_id: int
) -> tuple[PartitionResult, list[NewFile]]:
    """Place the partition's new files if it shrank; otherwise leave it as it is."""
    before = p.records_before
    after = sum(f.records for f in staged)
    if before is not None and after >= before:
        return (
            PartitionResult(p.partition, UNCHANGED, p.boundary, before, after),
            [],
        )
    files = place(staged, root, run_id)
    return (
        PartitionResult(
            p.partition,
            COMPACTED,
            p.boundary,
            before,
            after,
            files_removed=len(p.files),
            files_added=len(files),
        ),
        files,
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
