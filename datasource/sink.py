"""``df.write.format("liftlog")`` and ``df.writeStream.format("liftlog")``.

Rows are published as they stream through the task, so nothing waits for a final commit: like
Spark's Kafka sink this is at-least-once, and ``idempotent=true`` turns a retried task (or a
replayed micro-batch) into no duplicates inside the stream's dedup window. Arrow writers:
Spark hands the rows over as Arrow batches, which become producer batches without touching
single rows.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from datasource.options import SinkOptions
from datasource.publisher import Published, publish_task
from spark_log.value_schema import ValueSchema

log = logging.getLogger("liftlog.sink")

QUERY_ID_PROPERTY = "sql.streaming.queryId"
"""Spark's local property with the streaming query's id (kept across restarts)."""
BATCH_ID_PROPERTY = "streaming.sql.batchId"


class LiftlogArrowWriter(DataSourceArrowWriter):
    """Batch writes. ``write_id`` is made once per write on the driver, so every attempt of a
    task derives the same message ids (``idempotencyKey`` fixes it across jobs too)."""

    def __init__(self, options: SinkOptions, binding: ValueSchema | None = None) -> None:
        self.options = options
        self.binding = binding
        """Rows are value fields serialised with this binding's subject (None: ``value``)."""
        self.write_id = options.idempotency_key or uuid.uuid4().hex

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        prefix = _task_prefix(self.write_id) if self.options.idempotent else None
        return publish_task(self.options, iterator, prefix, self.binding)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        log.info("published %d rows to %s", _rows(messages), self.options.stream)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        log.warning(
            "write to %s failed; %d rows of finished tasks stay published (at-least-once)",
            self.options.stream,
            _rows(messages),
        )


class LiftlogStreamArrowWriter(DataSourceStreamArrowWriter):
    """Streaming writes. Ids come from the query id and the micro-batch id, so a batch Spark
    replays after a restart carries the ids its first run used."""

    def __init__(self, options: SinkOptions, binding: ValueSchema | None = None) -> None:
        self.options = options
        self.binding = binding

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        prefix = _task_prefix(_micro_batch_id(self.options)) if self.options.idempotent else None
        return publish_task(self.options, iterator, prefix, self.binding)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        log.debug(
            "batch %d: published %d rows to %s", batchId, _rows(messages), self.options.stream
        )

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        log.warning("batch %d to %s failed (at-least-once)", batchId, self.options.stream)


def _task_prefix(write_id: str) -> str:
    """``<write id>-t<Spark partition id>``: the same for every attempt of the task."""
    context = TaskContext.get()
    task = context.partitionId() if context is not None else 0
    return f"{write_id}-t{task}"


def _micro_batch_id(options: SinkOptions) -> str:
    context = TaskContext.get()
    query = context.getLocalProperty(QUERY_ID_PROPERTY) if context is not None else None
    batch = context.getLocalProperty(BATCH_ID_PROPERTY) if context is not None else None
    base = options.idempotency_key or query or "liftlog"
    return f"{base}-b{batch}"


def _rows(messages: list[WriterCommitMessage | None]) -> int:
    return sum(m.rows for m in messages if isinstance(m, Published))
