"""Executor side: one task's rows, from the lake or the tail, as output Arrow batches.

The seam between lake and tail is an offset: the planner put everything below the snapshot's
lake offset in lake tasks and everything from it in tail tasks, so no record is read twice or
skipped. A tail task can still find its offsets gone from the log (retention ran after a later
export); it then reads them from the lake's newer snapshot, which by the lake's contract holds
every offset the log dropped. Only what neither holds is data loss.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from datasource.errors import DataLossError
from datasource.lake_read import DEFAULT_BATCH_ROWS, read_lake
from datasource.lake_view import load_lake_view
from datasource.schema import SOURCE_COLUMNS, source_columns, to_output_batch
from datasource.stream_view import describe
from datasource.tail_fetch import TailFetcher
from datasource.tasks import LAKE, ReadSettings, ReadTask
from spark_log.errors import OffsetOutOfRangeError
from spark_log.rest import RestClient


def read_task(task: ReadTask) -> Iterator[pa.RecordBatch]:
    """The output batches of ``task`` (empty batches are never yielded)."""
    settings = task.settings
    if task.source == LAKE:
        columns = source_columns(settings.include_headers)
        source = read_lake(task.files, task.start, task.end, settings.rows, columns=columns)
    else:
        source = _rebatch(_tail_rows(settings, task), DEFAULT_BATCH_ROWS)
    for rows in source:
        batch = to_output_batch(rows, settings.stream, task.partition, settings.include_headers)
        if not settings.rows.empty:
            batch = settings.rows.apply(batch)
        if batch.num_rows:
            yield batch


def _tail_rows(settings: ReadSettings, task: ReadTask) -> Iterator[pa.RecordBatch]:
    fetcher = TailFetcher(settings.servers, settings.stream, task.partition, task.leader_url)
    offset = task.start
    while offset < task.end:
        try:
            table = fetcher.fetch(offset, task.end - offset)
        except OffsetOutOfRangeError:
            offset = yield from _below_log_start(settings, task, offset)
            continue
        if table.num_rows == 0:
            offset = _missing(settings, task, offset, task.end, "the partition's high watermark")
            continue
        table = table.slice(0, min(table.num_rows, task.end - offset)).select(SOURCE_COLUMNS)
        yield from table.to_batches()
        offset = table.column("offset")[-1].as_py() + 1


def _below_log_start(
    settings: ReadSettings, task: ReadTask, offset: int
) -> Iterator[pa.RecordBatch]:
    """Offsets from ``offset`` left the log: read what the lake now holds; return where the
    tail continues."""
    lake_end = offset
    if settings.lake_uri is not None:
        lake = load_lake_view(settings.lake_uri, settings.stream, task.partition + 1)
        if lake is not None:
            lake_end = min(task.end, lake.lake_offset(task.partition))
            if lake_end > offset:
                files = tuple(
                    f.path for f in lake.files_overlapping(task.partition, offset, lake_end)
                )
                yield from read_lake(files, offset, lake_end, settings.rows)
                return lake_end
    view = describe(RestClient(settings.servers), settings.stream).partition(task.partition)
    log_start = view.log_start_offset if view.log_start_offset is not None else task.end
    return _missing(settings, task, offset, min(max(log_start, offset + 1), task.end), "the log")


def _missing(settings: ReadSettings, task: ReadTask, offset: int, resume: int, where: str) -> int:
    """Offsets ``[offset, resume)`` exist nowhere: fail, or skip them (failOnDataLoss=false)."""
    if settings.fail_on_data_loss:
        raise DataLossError(
            f"offsets [{offset}, {resume}) of {settings.stream}/{task.partition} are no longer "
            f"available (stopped at {where}); set failOnDataLoss=false to skip them"
        )
    return resume


def _rebatch(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """Many small fetch batches as fewer big ones (Spark's cost is per batch, not per row)."""
    pending: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        pending.append(batch)
        count += batch.num_rows
        if count >= rows:
            yield pa.concat_batches(pending)
            pending, count = [], 0
    if pending:
        yield pa.concat_batches(pending)
