"""Executor side of the sink: one task's rows published as producer batches with acks=all.

Each producer batch is one NATS message and one ack, and several are in flight at once
(bounded), all on one NATS connection, so the leader receives a partition's batches in the
task's order. With ``idempotent=true`` every batch carries a ``Nats-Msg-Id`` derived from the
write's id, the Spark task's partition, the target partition and the batch's sequence number:
a retried task sends the same batches under the same ids, and the leader acks duplicates
inside its dedup window with their original offsets instead of storing them again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark.sql.datasource import WriterCommitMessage

from datasource.errors import PublishError
from datasource.options import SinkOptions
from datasource.sink_rows import (
    CHUNK_MAX_BYTES,
    by_partition,
    chunk_rows,
    producer_columns,
    target_partitions,
)
from datasource.sink_typed import with_serialised_values
from datasource.typed_lookup import process_registry
from spark_log.client import Client
from spark_log.errors import LiftlogError
from spark_log.value_schema import ValueSchema

MAX_IN_FLIGHT = 16
"""Producer batches a task has in flight: enough to hide the ack round trip."""
PAYLOAD_MARGIN = 0.9
"""Share of the server's max payload a producer batch may fill (Arrow framing overhead)."""
ACK_ALL = "all"


@dataclass
class Published(WriterCommitMessage):
    """What one task published (Spark hands these to the driver's commit)."""

    rows: int = 0
    per_partition: dict[int, int] = field(default_factory=dict)


def publish_task(
    options: SinkOptions,
    batches: Iterator[pa.RecordBatch],
    id_prefix: str | None,
    binding: ValueSchema | None = None,
) -> Published:
    """Publish every row of ``batches``; PublishError (the task fails) on any refusal.
    ``binding``: rows are value fields, serialised with its subject's latest schema."""
    return asyncio.run(_publish_all(options, batches, id_prefix, binding))


async def _publish_all(
    options: SinkOptions,
    batches: Iterator[pa.RecordBatch],
    id_prefix: str | None,
    binding: ValueSchema | None,
) -> Published:
    async with Client(
        options.servers,
        nats_url=options.nats_url,
        ack_timeout_s=options.ack_timeout_s,
        credentials=options.credentials,
    ) as client:
        try:
            partitions = (await client.stream_spec(options.stream)).partitions
            max_bytes = min(CHUNK_MAX_BYTES, int(await client.max_payload() * PAYLOAD_MARGIN))
        except LiftlogError as exc:
            raise PublishError(f"cannot publish to stream {options.stream}: {exc.message}") from exc
        window = _Window(client, options.stream)
        sequence: dict[int, int] = {}
        published = Published()
        rows_in = iter(batches)
        while (batch := await asyncio.to_thread(next, rows_in, None)) is not None:
            # Spark's next batch is awaited in a thread: the loop keeps sending and acking
            if batch.num_rows == 0:
                continue
            if binding is not None:
                batch = await _serialised(options, batch, binding)
            table = producer_columns(batch)
            targets = target_partitions(
                batch, table.column("key").combine_chunks(), partitions, published.rows
            )
            for partition, rows in by_partition(table, targets):
                for chunk in chunk_rows(rows, max_bytes):
                    seq = sequence.get(partition, 0)
                    sequence[partition] = seq + 1
                    msg_id = f"{id_prefix}-p{partition}-{seq}" if id_prefix else None
                    await window.submit(chunk, partition, msg_id)
                    published.per_partition[partition] = (
                        published.per_partition.get(partition, 0) + chunk.num_rows
                    )
            published.rows += batch.num_rows
        await window.drain()
        return published


async def _serialised(
    options: SinkOptions, batch: pa.RecordBatch, binding: ValueSchema
) -> pa.RecordBatch:
    """A typed batch with its rows' values serialised (the latest schema, cached a while)."""
    registry = process_registry(options.servers, options.credentials)
    try:
        latest = await asyncio.to_thread(registry.latest, binding.subject)
    except LiftlogError as exc:
        raise PublishError(f"cannot read subject {binding.subject!r}: {exc.message}") from exc
    return with_serialised_values(batch, options.stream, binding, latest)


class _Window:
    """At most MAX_IN_FLIGHT producer batches awaiting their acks; the first failure wins."""

    def __init__(self, client: Client, stream: str) -> None:
        self.client = client
        self.stream = stream
        self._slots = asyncio.Semaphore(MAX_IN_FLIGHT)
        self._pending: set[asyncio.Task[None]] = set()
        self._errors: list[PublishError] = []

    async def submit(self, chunk: pa.Table, partition: int, msg_id: str | None) -> None:
        if self._errors:
            await self.drain()
        await self._slots.acquire()
        task = asyncio.create_task(self._publish(chunk, partition, msg_id))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _publish(self, chunk: pa.Table, partition: int, msg_id: str | None) -> None:
        try:
            await self.client.publish_table(
                self.stream, chunk, partition=partition, ack_policy=ACK_ALL, msg_id=msg_id
            )
        except LiftlogError as exc:
            self._errors.append(
                PublishError(
                    f"publishing {chunk.num_rows} rows to {self.stream}/{partition} failed: "
                    f"{exc.code}: {exc.message}"
                )
            )
        finally:
            self._slots.release()

    async def drain(self) -> None:
        """Wait for every batch in flight; raise the first failure."""
        if self._pending:
            await asyncio.gather(*list(self._pending))
        if self._errors:
            first = self._errors[0]
            more = f" (and {len(self._errors) - 1} more)" if len(self._errors) > 1 else ""
            raise PublishError(first.message + more)
