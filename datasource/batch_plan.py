"""Planning a batch read: options → offset ranges per partition → Spark tasks.

Runs once per DataFrame, in Spark's planner (Spark 4.3 plans a Python source once and reuses
the plan for every later action on the same DataFrame), so ``latest`` means the high watermark
when the DataFrame is first executed. The cluster is asked once (describe), the lake once (one
Delta snapshot); tasks then carry everything an executor needs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from datasource.bounds import PartitionBounds, check_range, partition_bounds, readable_segments
from datasource.errors import InvalidOptionError
from datasource.lake_view import LakeView, load_lake_view
from datasource.options import BatchOptions, SourceOptions
from datasource.pushdown import Pruning
from datasource.splitting import Segment, split, task_size
from datasource.stream_view import StreamView, describe
from datasource.tasks import ReadSettings, ReadTask
from datasource.timestamps import resolve_offset
from datasource.typed_plan import TypedRead, binary_lake_columns
from spark_log.client.rest import RestClient
from spark_log.lake.storage import LakeStorage


@dataclass(frozen=True)
class ReadPlan:
    settings: ReadSettings
    tasks: list[ReadTask]


def plan_batch(
    opts: BatchOptions, pruning: Pruning | None = None, typed: TypedRead | None = None
) -> ReadPlan:
    """The tasks of one batch read (``pruning`` from pushed-down filters narrows them;
    ``typed``: the columns of a typed read)."""
    pruning = pruning or Pruning()
    rest = RestClient(opts.servers, credentials=opts.credentials)
    view = describe(rest, opts.stream)
    lake_uri = opts.lake_uri or view.lake_uri
    lake = (
        load_lake_view(lake_uri, opts.stream, view.partition_count, lake_storage(opts, lake_uri))
        if lake_uri
        else None
    )
    segments: list[Segment] = []
    for p in selected_partitions(opts, view):
        if not pruning.allows_partition(p):
            continue
        bounds = partition_bounds(opts.stream, view.partition(p), lake)
        start, end = _batch_range(opts, rest, view, lake, bounds)
        start, end = pruning.clamp(start, end)
        segments.extend(readable_segments(opts.stream, bounds, start, end, opts.fail_on_data_loss))
    per_task = task_size(segments, opts.max_records_per_partition, opts.min_partitions)
    leaders = {p.partition: p.leader_url for p in view.partitions}
    settings = read_settings(opts, lake_uri, pruning, view.encrypted, typed)
    if typed is None and lake is not None and view.value_schema is not None:
        extra = binary_lake_columns(lake_storage(opts, lake.uri))
        settings = dataclasses.replace(settings, typed_lake_columns=extra)
    return ReadPlan(settings, split(settings, segments, lake, leaders, per_task))


def read_settings(
    opts: SourceOptions,
    lake_uri: str | None,
    pruning: Pruning,
    encrypted: bool = False,
    typed: TypedRead | None = None,
) -> ReadSettings:
    return ReadSettings(
        encrypted=encrypted,
        typed=typed,
        servers=opts.servers,
        stream=opts.stream,
        include_headers=opts.include_headers,
        fail_on_data_loss=opts.fail_on_data_loss,
        lake_uri=lake_uri,
        rows=pruning.rows,
        lake_options=opts.lake_options,
        credentials=opts.credentials,
    )


def lake_storage(opts: SourceOptions, lake_uri: str) -> LakeStorage:
    """The lake as this read reaches it: its URI with the ``lake.<NAME>`` options."""
    return LakeStorage(lake_uri, dict(opts.lake_options))


def selected_partitions(opts: SourceOptions, view: StreamView) -> list[int]:
    """The ``partitions`` option checked against the stream (all partitions without it)."""
    count = view.partition_count
    if opts.partitions is None:
        return list(range(count))
    missing = [p for p in opts.partitions if p >= count]
    if missing:
        raise InvalidOptionError(
            f"partitions {missing} do not exist: stream {opts.stream} has {count} partition(s)"
        )
    return list(opts.partitions)


def _batch_range(
    opts: BatchOptions,
    rest: RestClient,
    view: StreamView,
    lake: LakeView | None,
    bounds: PartitionBounds,
) -> tuple[int, int]:
    """Start and end offsets; timestamps win over offsets, as in Kafka's source."""
    leader = view.partition(bounds.partition).leader_url
    start = resolve_offset(
        rest, opts.stream, bounds, leader, lake, opts.starting, opts.starting_timestamp_ms
    )
    end = resolve_offset(
        rest, opts.stream, bounds, leader, lake, opts.ending, opts.ending_timestamp_ms
    )
    if opts.starting_timestamp_ms is not None or opts.ending_timestamp_ms is not None:
        return start, max(start, end)
    check_range(opts.stream, bounds, start, end)
    return start, end
