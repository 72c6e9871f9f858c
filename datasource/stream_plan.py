"""Planning for streaming: the starting offsets, the head of every partition, and the tasks of
one micro-batch.

A micro-batch is ``[start, end)`` per partition, both from Spark's offset log, so planning
must give the same rows whenever it is asked again (a restart replays the last batch): it
depends only on the offsets. Below the lake offset rows come from the lake, above it from the
leaders; the lake is only opened when a batch reaches below what the nodes say is exported or
retained, so a query that keeps up never touches it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from datasource.batch_plan import lake_storage, read_settings, selected_partitions
from datasource.bounds import partition_bounds, readable_segments
from datasource.errors import DataLossError
from datasource.lake_view import LakeView, load_lake_view
from datasource.offsets import EARLIEST
from datasource.options import StreamOptions
from datasource.pushdown import Pruning
from datasource.splitting import Segment, split, task_size
from datasource.stream_view import PartitionView, StreamView, describe
from datasource.tasks import ReadTask
from datasource.timestamps import resolve_offset
from datasource.typed_plan import TypedRead, binary_lake_columns
from spark_log.client.rest import RestClient


def initial_offsets(opts: StreamOptions, rest: RestClient) -> dict[int, int]:
    """``startingOffsets`` / ``startingTimestamp`` resolved to offsets, per partition."""
    view = describe(rest, opts.stream)
    lake = _lake_for_start(opts, view)
    offsets = {}
    for p in selected_partitions(opts, view):
        bounds = partition_bounds(opts.stream, view.partition(p), lake)
        leader = view.partition(p).leader_url
        offsets[p] = resolve_offset(
            rest, opts.stream, bounds, leader, lake, opts.starting, opts.starting_timestamp_ms
        )
    return offsets


def head_offsets(opts: StreamOptions, rest: RestClient) -> dict[int, int | None]:
    """Each selected partition's HW now (None while it has no answering leader)."""
    view = describe(rest, opts.stream)
    return {p: view.partition(p).high_watermark for p in selected_partitions(opts, view)}


def checked_available(
    opts: StreamOptions, start: Mapping[int, int], heads: Mapping[int, int | None]
) -> dict[int, int]:
    """Heads as offsets a batch may end at: never below its start. A head below the start
    means the offsets went backwards (the stream was re-created, or an unclean election lost
    records): DataLossError with ``failOnDataLoss``, else the partition waits at its start."""
    available = {}
    for p, head in heads.items():
        begin = start.get(p, 0)
        if head is None:
            available[p] = begin
        elif head < begin:
            if opts.fail_on_data_loss:
                raise DataLossError(
                    f"{opts.stream}/{p} is at offset {head}, behind this query's offset "
                    f"{begin}: was the stream re-created, or a leader elected uncleanly? "
                    "Use a new checkpoint, or failOnDataLoss=false to wait for new records"
                )
            available[p] = begin
        else:
            available[p] = head
    return available


def plan_micro_batch(
    opts: StreamOptions,
    rest: RestClient,
    start: Mapping[int, int],
    end: Mapping[int, int],
    typed: TypedRead | None = None,
) -> list[ReadTask]:
    """The tasks of one micro-batch ``[start, end)`` (``typed``: a typed read's columns)."""
    view = describe(rest, opts.stream)
    wanted = {p: (start.get(p, 0), e) for p, e in end.items() if e > start.get(p, 0)}
    lake_uri = opts.lake_uri or view.lake_uri
    lake = _lake_for_batch(opts, view, wanted) if lake_uri else None
    segments: list[Segment] = []
    for p, (s, e) in sorted(wanted.items()):
        part = view.partition(p)
        if part.log_start_offset is None or part.high_watermark is None:
            segments.append(Segment(p, s, e))  # leaderless now: the tasks wait for a leader
            continue
        bounds = partition_bounds(opts.stream, part, lake)
        segments.extend(readable_segments(opts.stream, bounds, s, e, opts.fail_on_data_loss))
    per_task = task_size(segments, opts.max_records_per_partition, opts.min_partitions)
    leaders = {p.partition: p.leader_url for p in view.partitions}
    settings = read_settings(opts, lake_uri, Pruning(), view.encrypted, typed)
    if typed is None and lake is not None and view.value_schema is not None:
        extra = binary_lake_columns(lake_storage(opts, lake.uri))
        settings = dataclasses.replace(settings, typed_lake_columns=extra)
    return split(settings, segments, lake, leaders, per_task)


def _lake_for_start(opts: StreamOptions, view: StreamView) -> LakeView | None:
    """The lake, if the starting offsets need it (earliest, or a time)."""
    uri = opts.lake_uri or view.lake_uri
    values = {opts.starting.default, *opts.starting.per_partition.values()}
    if uri is None or (opts.starting_timestamp_ms is None and EARLIEST not in values):
        return None
    return load_lake_view(uri, opts.stream, view.partition_count, lake_storage(opts, uri))


def _lake_for_batch(
    opts: StreamOptions, view: StreamView, wanted: Mapping[int, tuple[int, int]]
) -> LakeView | None:
    """The lake, if some range starts below what a leader says the log or lake cover."""
    uri = opts.lake_uri or view.lake_uri
    if uri is None:
        return None
    if all(_log_has(view.partition(p), s) for p, (s, _e) in wanted.items()):
        return None
    return load_lake_view(uri, opts.stream, view.partition_count, lake_storage(opts, uri))


def _log_has(part: PartitionView, start: int) -> bool:
    """Whether the tail alone serves a range from ``start``: the log still holds it and it is
    not below the lake offset (where reading Parquet is cheaper than the nodes)."""
    if part.log_start_offset is None:
        return True  # no leader to ask: the tail task waits for one
    if start < part.log_start_offset:
        return False
    return part.lake_offset is not None and start >= part.lake_offset
