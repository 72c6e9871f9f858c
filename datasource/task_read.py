"""Executor side: one task's rows, from the lake or the tail, as output Arrow batches.

The seam between lake and tail is an offset: the planner put everything below the snapshot's
lake offset in lake tasks and everything from it in tail tasks, so no record is read twice or
skipped. A tail task can still find its offsets gone from the log (retention ran after a later
export); it then reads them from the lake's newer snapshot, which by the lake's contract holds
every offset the log dropped. Only what neither holds is data loss.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator

import pyarrow as pa

from datasource.errors import DataLossError
from datasource.lake_keys import partition_crypto
from datasource.lake_read import DEFAULT_BATCH_ROWS, read_lake
from datasource.lake_view import load_lake_view
from datasource.schema import SOURCE_COLUMNS, source_columns, to_output_batch
from datasource.stream_view import describe
from datasource.tail_fetch import TailFetcher
from datasource.tasks import LAKE, ReadSettings, ReadTask
from datasource.typed_binary import with_raw_values
from datasource.typed_lookup import process_registry
from datasource.typed_output import typed_output
from datasource.typed_schema import typed_lake_columns
from spark_log.client.rest import RestClient
from spark_log.errors import OffsetOutOfRangeError


def read_task(task: ReadTask) -> Iterator[pa.RecordBatch]:
    """The output batches of ``task`` (empty batches are never yielded)."""
    settings = task.settings
    if task.source == LAKE:
        source = read_lake(
            task.files,
            task.start,
            task.end,
            settings.rows,
            columns=lake_columns(settings),
            storage=settings.lake_storage,
            crypto=partition_crypto(settings, task.partition),
        )
        yield from output_batches(source, settings, task.partition)
    else:
        yield from tail_output(_tail_rows(settings, task), settings, task.partition)


def output_batches(
    source: Iterable[pa.RecordBatch], settings: ReadSettings, partition: int
) -> Iterator[pa.RecordBatch]:
    """Source batches (lake or fetch rows, whatever their schema) as output batches, with the
    read's row filter applied; empty ones are dropped, as Spark gains nothing from them."""
    if settings.typed is not None:
        yield from typed_output(source, settings, settings.typed, partition)
        return
    registry = (
        process_registry(settings.servers, settings.credentials)
        if settings.typed_lake_columns
        else None
    )
    for rows in source:
        if registry is not None:
            rows = with_raw_values(rows, registry)
        batch = to_output_batch(rows, settings.stream, partition, settings.include_headers)
        batch = settings.rows.apply(batch)
        if batch.num_rows:
            yield batch


def tail_output(
    source: Iterable[pa.RecordBatch],
    settings: ReadSettings,
    partition: int,
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> Iterator[pa.RecordBatch]:
    """A tail task's source batches as output batches of about ``batch_rows`` rows.

    The source mixes REST fetch rows (ms timestamps, nullable fields) with lake rows (µs,
    non-nullable) when retention sent the task to the lake, and Arrow concatenates only batches
    of one schema: so each is converted to the output schema first and only then rebatched."""
    return _rebatch(output_batches(source, settings, partition), batch_rows)


def as_schema(
    batches: Iterable[pa.RecordBatch], schema: pa.Schema | None
) -> Iterator[pa.RecordBatch]:
    """``batches`` labelled with ``schema`` (None: as they are): a user's ``.schema(...)`` may
    declare more columns nullable than the output schema, and Spark wants exactly its own Arrow
    schema. Only the labels change: a nullable column may hold no null, and no data is copied."""
    for batch in batches:
        yield batch if schema is None else pa.RecordBatch.from_arrays(batch.columns, schema=schema)


def lake_columns(settings: ReadSettings) -> list[str]:
    """The columns a lake file is read for: Kafka's, or a typed read's table columns."""
    if settings.typed is not None:
        return typed_lake_columns(settings.typed, settings.include_headers)
    return [*source_columns(settings.include_headers), *settings.typed_lake_columns]


def _tail_rows(settings: ReadSettings, task: ReadTask) -> Iterator[pa.RecordBatch]:
    fetcher = TailFetcher(
        settings.servers, settings.stream, task.partition, task.leader_url, settings.credentials
    )
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
        # One batch per fetch, not one per stored batch: converting a batch to the output
        # schema costs ~100 µs, and stored batches may hold a single record each.
        yield from table.combine_chunks().to_batches()
        offset = table.column("offset")[-1].as_py() + 1


def _below_log_start(
    settings: ReadSettings, task: ReadTask, offset: int
) -> Generator[pa.RecordBatch, None, int]:
    """Offsets from ``offset`` left the log: read what the lake now holds; return where the
    tail continues."""
    lake_end = offset
    if settings.lake_uri is not None:
        lake = load_lake_view(
            settings.lake_uri, settings.stream, task.partition + 1, settings.lake_storage
        )
        if lake is not None:
            lake_end = min(task.end, lake.lake_offset(task.partition))
            if lake_end > offset:
                files = tuple(
                    f.path for f in lake.files_overlapping(task.partition, offset, lake_end)
                )
                yield from read_lake(
                    files,
                    offset,
                    lake_end,
                    settings.rows,
                    columns=lake_columns(settings),
                    storage=lake.storage,
                    crypto=partition_crypto(settings, task.partition),
                )
                return lake_end
    rest = RestClient(settings.servers, credentials=settings.credentials)
    view = describe(rest, settings.stream).partition(task.partition)
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


def _rebatch(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """Many small batches of one schema as fewer big ones (Spark's cost is per batch, not per
    row). It yields an empty batch only if given nothing but empty ones: feed it non-empty."""
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
