"""The one Delta commit of a compaction: remove the files read, add the files written, and
move the compaction state (app transactions) of every partition computed.

Before committing, the latest version is checked (has another compaction committed, is every
file read still there?), and then the commit is made against the snapshot the files were
listed from, so delta-rs's own conflict check covers the moment between check and commit.
See ``spark_log.lake.rewrite`` for why this makes racing compactions safe and exports
unaffected.
"""

from __future__ import annotations

from collections.abc import Sequence

from datasource.compaction.job import TombstoneCounts
from datasource.compaction.plan import CompactionPlan, PartitionPlan
from datasource.compaction.report import PartitionResult, commit_summary
from spark_log.lake.compaction_state import (
    COMPACTION_METADATA_KEY,
    NO_TOMBSTONES,
    cleaned_app_id,
    compaction_app_id,
    tombstones_app_id,
)
from spark_log.lake.errors import LakeCommitConflictError
from spark_log.lake.new_file import NewFile
from spark_log.lake.rewrite import RewriteSnapshot, TableFile, changed_since


def commit_compaction(
    snapshot: RewriteSnapshot,
    plan: CompactionPlan,
    results: Sequence[PartitionResult],
    removed: Sequence[TableFile],
    added: Sequence[NewFile],
    tombstones: TombstoneCounts,
) -> int:
    """Commit, or raise LakeCommitConflictError when another compaction got there first."""
    app = compaction_app_id(plan.target.stream)
    reason = changed_since(snapshot.storage, app, plan.previous_run, [f.path for f in removed])
    if reason is not None:
        raise LakeCommitConflictError(
            f"not committing the compaction of {plan.target.stream}: {reason}"
        )
    return snapshot.commit_replace(
        removed,
        added,
        state_transactions(plan, tombstones),
        {COMPACTION_METADATA_KEY: _metadata(plan, results, tombstones)},
    )


def state_transactions(plan: CompactionPlan, tombstones: TombstoneCounts) -> dict[str, int]:
    """The run id, and per computed partition its cleaned offset and tombstone expiry."""
    stream = plan.target.stream
    transactions = {compaction_app_id(stream): plan.run_id}
    for p in plan.partitions:
        cleaned = max(p.boundary, p.state.cleaned_offset or 0)
        transactions[cleaned_app_id(stream, p.partition)] = cleaned
        transactions[tombstones_app_id(stream, p.partition)] = tombstone_expiry(
            p, tombstones, plan.target.delete_retention_ms
        )
    return transactions


def tombstone_expiry(p: PartitionPlan, tombstones: TombstoneCounts, retention_ms: int) -> int:
    """When a tombstone this run kept in ``p`` may expire (NO_TOMBSTONES: none kept).

    The job observes the oldest kept tombstone over all partitions, not per partition, so the
    time is a lower bound: at worst a partition is computed once more, finds nothing to
    remove, and keeps its files. Tombstones between a lowered boundary and the previous
    cleaned offset were not looked at, so the previous expiry still counts for them."""
    expiry: int | None = None
    if p.partition in tombstones.partitions_with_kept and tombstones.oldest_kept_ms is not None:
        expiry = tombstones.oldest_kept_ms + retention_ms
    previous = p.state.tombstones_expire_at_ms
    lowered = p.state.cleaned_offset is not None and p.boundary < p.state.cleaned_offset
    if lowered and previous:
        expiry = previous if expiry is None else min(expiry, previous)
    return NO_TOMBSTONES if expiry is None else expiry


def _metadata(
    plan: CompactionPlan, results: Sequence[PartitionResult], tombstones: TombstoneCounts
) -> dict[str, object]:
    return {
        "operation": "compaction",
        "stream": plan.target.stream,
        "run": plan.run_id,
        "read_version": plan.snapshot_version,
        "started_at_ms": plan.started_at_ms,
        "delete_retention_ms": plan.target.delete_retention_ms,
        "tombstones_removed": tombstones.removed,
        "partitions": commit_summary(tuple(results)),
    }
