"""Offset ranges cut into Spark tasks: lake files grouped whole, the tail in even chunks.

Lake tasks follow file boundaries so that no Parquet row group is decoded by two tasks (a
task's offset filter would throw the other task's rows away after decoding them); only a file
larger than one task is cut by offset, and its row-group statistics then skip the rest. The
tasks of one partition always cover its range exactly once: consecutive boundaries, no gap,
no overlap, whatever the files look like.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from datasource.lake_view import LakeFile, LakeView
from datasource.tasks import LAKE, TAIL, ReadSettings, ReadTask


@dataclass(frozen=True)
class Segment:
    """Offsets ``[start, end)`` of one partition that a read must return."""

    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


def task_size(segments: Iterable[Segment], max_records: int, min_partitions: int | None) -> int:
    """Records per task: ``max_records``, smaller if ``min_partitions`` asks for more tasks."""
    if not min_partitions:
        return max_records
    total = sum(s.size for s in segments)
    return max(1, min(max_records, math.ceil(total / min_partitions)))


def split(
    settings: ReadSettings,
    segments: list[Segment],
    lake: LakeView | None,
    leaders: Mapping[int, str | None],
    per_task: int,
) -> list[ReadTask]:
    """Every segment as tasks: the part below its lake offset from files, the rest the tail."""
    rows = settings.rows
    tasks: list[ReadTask] = []
    for segment in segments:
        if segment.size == 0:
            continue
        lake_end = min(segment.end, lake.lake_offset(segment.partition)) if lake else segment.start
        if lake is not None and lake_end > segment.start:
            files = [
                f
                for f in lake.files_overlapping(segment.partition, segment.start, lake_end)
                if rows.may_match_file(f.min_timestamp_us, f.max_timestamp_us)
            ]
            tasks.extend(
                lake_tasks(settings, segment.partition, segment.start, lake_end, files, per_task)
            )
        tail_start = max(segment.start, lake_end)
        for lo, hi in chunks(tail_start, segment.end, per_task):
            leader = leaders.get(segment.partition)
            tasks.append(ReadTask(settings, segment.partition, lo, hi, TAIL, leader_url=leader))
    return tasks


def lake_tasks(
    settings: ReadSettings,
    partition: int,
    start: int,
    end: int,
    files: list[LakeFile],
    per_task: int,
) -> list[ReadTask]:
    """Tasks over ``[start, end)`` of the lake; ranges no file overlaps need no task."""
    bounds = _boundaries(start, end, files, per_task)
    tasks = []
    for lo, hi in itertools.pairwise(bounds):
        overlapping = tuple(f.path for f in files if f.overlaps(lo, hi))
        if overlapping:
            tasks.append(ReadTask(settings, partition, lo, hi, LAKE, files=overlapping))
    return tasks


def _boundaries(start: int, end: int, files: list[LakeFile], per_task: int) -> list[int]:
    bounds = [start]
    pending = 0
    for lake_file in sorted(files, key=lambda f: f.min_offset):
        lo = max(lake_file.min_offset, start)
        hi = min(lake_file.max_offset + 1, end)
        if hi <= lo:
            continue
        count = min(lake_file.records, hi - lo) if lake_file.records else hi - lo
        if pending and pending + count > per_task and lo > bounds[-1]:
            bounds.append(lo)
            pending = 0
        if count > per_task:
            cut = lo + per_task
            while cut < hi:
                if cut > bounds[-1]:
                    bounds.append(cut)
                cut += per_task
            pending = (hi - lo) % per_task
        else:
            pending += count
    if end > bounds[-1]:
        bounds.append(end)
    return bounds


def chunks(start: int, end: int, size: int) -> list[tuple[int, int]]:
    """``[start, end)`` cut into consecutive ranges of at most ``size`` offsets."""
    return [(lo, min(lo + size, end)) for lo in range(start, end, size)]
