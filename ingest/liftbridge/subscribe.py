"""Subscribe: a partition's committed records as a server stream, from a start position to a
stop position (or until the client cancels).

Everything that can refuse the subscription is checked before the empty handshake
``Message`` that Liftbridge's clients wait for (``subscribe_access``, ``subscribe_positions``).
The records then come from the read path the REST fetch uses (``fetch_until_stop`` over
``TieredReads``): batches bounded like a REST fetch, the lake below the local log start,
values decrypted on the node, and at the high watermark the replica's long-poll, so a
subscriber waiting for records costs no task of its own and no polling. Messages are yielded
one at a time and gRPC accepts the next only when flow control lets it through, so a slow
client holds at most one batch here. A stop position reached ends the stream with
RESOURCE_EXHAUSTED; a replica that may no longer serve ends it with FAILED_PRECONDITION.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator

from ingest.errors import StopPositionReachedError
from ingest.liftbridge.calls import RpcCall
from ingest.liftbridge.subscribe_access import check_serves, serving_replica
from ingest.liftbridge.subscribe_positions import ms_to_ns, start_offset, stop_position
from ingest.replica.positions import FetchLimits, Stop, fetch_until_stop
from ingest.replica.replica import PartitionReplica
from ingest.replica.tiered_fetch import TieredReads
from spark_log.config import IngestConfig
from spark_log.errors import StreamNotFoundError
from spark_log.liftbridge import api_pb2 as pb
from spark_log.log import Record

BATCH_RECORDS = 1000
BATCH_BYTES = 1024 * 1024
"""One read of a subscription: a REST fetch's default size (capped by the node's limits)."""


async def subscribe(call: RpcCall, request: pb.SubscribeRequest) -> AsyncIterator[pb.Message]:
    """Refusals first, then the handshake, then the records. A cancelled call (the client
    went away) cancels the read it waits in; nothing is left running."""
    replica = await serving_replica(call, request)
    reads = TieredReads(replica, call.services.lake)
    start = await start_offset(reads, request)
    stop = await stop_position(reads, request)
    gauge = call.node.metrics.liftbridge_subscriptions
    gauge.inc()
    try:
        yield pb.Message()
        records = _records(call, request, replica.created_at_ms, start, stop)
        async with contextlib.aclosing(records):
            async for message in records:
                yield message
    finally:
        gauge.dec()


async def _records(
    call: RpcCall, request: pb.SubscribeRequest, created_at_ms: int, offset: int, stop: Stop
) -> AsyncGenerator[pb.Message, None]:
    """Batches from ``offset`` on, until the stop position; the replica is looked up
    again before every read, so a deleted stream or a moved leader ends the stream."""
    limits = fetch_limits(call.node.config.ingest)
    while True:
        replica = _still_serving(call, request, created_at_ms)
        if stop.offset is None and replica.state.read_only:
            _end_of_read_only(replica, offset)
        if offset > replica.log.log_end_offset:
            await _wait_for_commit(replica, limits.wait_ms)
            continue
        result = await fetch_until_stop(
            TieredReads(replica, call.services.lake), offset, stop, limits, arrow=False
        )
        for record in result.records:
            yield record_message(record, request.stream, request.partition)
        if result.end_reached:
            raise StopPositionReachedError(
                f"the stop position of {request.stream}/{request.partition} was reached"
            )
        offset = result.next_offset


def fetch_limits(ingest: IngestConfig) -> FetchLimits:
    return FetchLimits(
        min(BATCH_RECORDS, ingest.max_fetch_records),
        min(BATCH_BYTES, ingest.max_fetch_bytes),
        ingest.max_wait_ms,
    )


def _still_serving(
    call: RpcCall, request: pb.SubscribeRequest, created_at_ms: int
) -> PartitionReplica:
    replica = call.node.replicas.replica(request.stream, request.partition)
    if replica.created_at_ms != created_at_ms:
        raise StreamNotFoundError(f"stream {request.stream!r} was deleted while subscribed")
    check_serves(replica.state, request.readISRReplica)
    return replica


def _end_of_read_only(replica: PartitionReplica, offset: int) -> None:
    """A read-only partition receives nothing more: a subscription without a stop ends at
    its last record, as in Liftbridge."""
    if offset >= replica.log.high_watermark:
        raise StopPositionReachedError(f"the end of read-only partition {replica.state.name}")


async def _wait_for_commit(replica: PartitionReplica, wait_ms: int) -> None:
    """Wait (up to ``wait_ms``) for the HW to move: a start beyond the log's end is waited
    for, as Liftbridge does, with the replica's long-poll (one record read per move)."""
    await replica.fetch(replica.log.high_watermark, 1, 1, wait_ms)


def record_message(record: Record, stream: str, partition: int) -> pb.Message:
    """A record as Liftbridge's ``Message``: an absent key is empty, timestamps in ns."""
    return pb.Message(
        offset=record.offset,
        key=record.key or b"",
        value=record.value,
        timestamp=ms_to_ns(record.timestamp),
        stream=stream,
        partition=partition,
        subject=record.subject,
        headers=dict(record.headers),
    )
