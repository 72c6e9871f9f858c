"""What one compaction run will do, decided from one snapshot before Spark starts (pure logic).

Per partition (Kafka's log cleaner, per partition):

- The **boundary** is the partition's lake offset in the snapshot (the first offset the lake
  does not hold), or ``--boundary-offset`` when that is lower. Records at or above it are left
  as they are; below it, only the latest record of each key stays.
- The files read are those that may hold offsets below the boundary. They are the files the
  commit removes (if the partition changes), so nothing else is ever removed: files exported
  after the snapshot, or holding only offsets above the boundary, are not touched.
- A partition is skipped when there is nothing new to do: its boundary is not above its
  cleaned offset (the last compaction already covered every record below it) and no kept
  tombstone may have expired since. ``--full`` recomputes it anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from datasource.compaction.errors import InvalidCompactionOptionError
from datasource.compaction.settings import CompactionOptions, CompactionTarget
from spark_log.lake.compaction_state import (
    CompactionState,
    PartitionCompactionState,
    next_run_id,
    read_compaction_state,
)
from spark_log.lake.rewrite import TableFile


class SnapshotView(Protocol):
    """What planning reads from a snapshot (``spark_log.lake.rewrite.RewriteSnapshot``)."""

    @property
    def version(self) -> int: ...

    def files(self) -> list[TableFile]: ...

    def transaction_version(self, app: str) -> int | None: ...

    def exported_offset(self, partition: int) -> int | None: ...


@dataclass(frozen=True)
class PartitionPlan:
    """A partition this run computes."""

    partition: int
    boundary: int
    files: tuple[TableFile, ...]
    state: PartitionCompactionState
    """What the last compaction left (kept when this run's result is merged in)."""

    @property
    def records_before(self) -> int | None:
        """Rows in the files read (None when a file lacks its record count)."""
        counts = [f.records for f in self.files]
        return None if any(c is None for c in counts) else sum(c for c in counts if c is not None)


@dataclass(frozen=True)
class SkippedPartition:
    partition: int
    reason: str
    boundary: int | None = None


@dataclass(frozen=True)
class CompactionPlan:
    target: CompactionTarget
    snapshot_version: int
    run_id: int
    previous_run: int | None
    started_at_ms: int
    tombstone_cutoff_ms: int
    """Tombstones with a timestamp before this are past the delete retention: removed."""
    boundary_offset: int | None
    """The offset filter applied to rows (None: every row of the files read is below its
    partition's boundary, as every snapshot row is below its lake offset)."""
    partitions: tuple[PartitionPlan, ...]
    skipped: tuple[SkippedPartition, ...]
    state: CompactionState

    @property
    def empty(self) -> bool:
        return not self.partitions

    @property
    def files(self) -> tuple[TableFile, ...]:
        return tuple(f for p in self.partitions for f in p.files)


def plan_compaction(
    snapshot: SnapshotView, target: CompactionTarget, options: CompactionOptions, now_ms: int
) -> CompactionPlan:
    """Decide which partitions to compact, below which offset, from which files."""
    chosen = _chosen_partitions(target, options)
    state = read_compaction_state(snapshot.transaction_version, target.stream, target.partitions)
    by_partition = _files_by_partition(snapshot.files())
    planned: list[PartitionPlan] = []
    skipped: list[SkippedPartition] = []
    for p in chosen:
        outcome = _plan_partition(
            p,
            by_partition.get(p, []),
            snapshot.exported_offset(p),
            state.partition(p),
            options,
            now_ms,
        )
        if isinstance(outcome, PartitionPlan):
            planned.append(outcome)
        else:
            skipped.append(outcome)
    return CompactionPlan(
        target=target,
        snapshot_version=snapshot.version,
        run_id=next_run_id(state.last_run, now_ms),
        previous_run=state.last_run,
        started_at_ms=now_ms,
        tombstone_cutoff_ms=now_ms - target.delete_retention_ms,
        boundary_offset=options.boundary_offset,
        partitions=tuple(planned),
        skipped=tuple(skipped),
        state=state,
    )


def _chosen_partitions(target: CompactionTarget, options: CompactionOptions) -> list[int]:
    if options.partitions is None:
        return list(range(target.partitions))
    unknown = sorted(p for p in options.partitions if p >= target.partitions)
    if unknown:
        raise InvalidCompactionOptionError(
            f"stream {target.stream} has {target.partitions} partition(s); no partition {unknown}"
        )
    return sorted(set(options.partitions))


def _files_by_partition(files: Sequence[TableFile]) -> dict[int, list[TableFile]]:
    by_partition: dict[int, list[TableFile]] = {}
    for f in files:
        by_partition.setdefault(f.partition, []).append(f)
    return by_partition


def _plan_partition(
    partition: int,
    files: list[TableFile],
    lake_offset: int | None,
    state: PartitionCompactionState,
    options: CompactionOptions,
    now_ms: int,
) -> PartitionPlan | SkippedPartition:
    if lake_offset is None or not files:
        return SkippedPartition(partition, "nothing exported to the lake yet")
    boundary = lake_offset
    if options.boundary_offset is not None:
        boundary = min(boundary, options.boundary_offset)
    below = tuple(
        sorted(
            (f for f in files if f.min_offset is None or f.min_offset < boundary),
            key=lambda f: (f.min_offset or 0, f.path),
        )
    )
    if not below:
        return SkippedPartition(partition, f"no records below offset {boundary}", boundary)
    if not options.full and _already_clean(state, boundary, now_ms):
        return SkippedPartition(
            partition,
            f"compacted up to offset {state.cleaned_offset}; nothing new below {boundary}",
            boundary,
        )
    return PartitionPlan(partition, boundary, below, state)


def _already_clean(state: PartitionCompactionState, boundary: int, now_ms: int) -> bool:
    if state.cleaned_offset is None or boundary > state.cleaned_offset:
        return False
    return not state.tombstones_due(now_ms)
