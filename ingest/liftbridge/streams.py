"""Stream admin RPCs: CreateStream, DeleteStream, PauseStream, SetStreamReadonly.

Each is the REST route's call into ``ingest.admin.streams``, but for PauseStream: Liftbridge
has no resume RPC, its pause lasts until the partition's next publish. That is Liftlog's pause
for idleness (``idle_paused_partitions``), which a publish lifts without losing it, so a
PauseStream marks each partition named as paused for idleness.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from coordinator.errors import InvalidReplicationFactorError
from ingest.admin import streams as admin
from ingest.liftbridge.calls import RpcCall
from ingest.liftbridge.stream_request import spec_from_request
from spark_log.errors import InvalidRequestError, PartitionNotFoundError, StreamExistsError
from spark_log.liftbridge import api_pb2 as pb


async def create_stream(call: RpcCall, request: pb.CreateStreamRequest) -> pb.CreateStreamResponse:
    """ALREADY_EXISTS whenever the stream exists, even with the same spec (as Liftbridge)."""
    live_brokers = len(await call.node.live_brokers()) if request.replicationFactor < 0 else 0
    spec = spec_from_request(request, live_brokers)
    try:
        created, _described = await admin.create_stream(call.node, spec)
    except InvalidReplicationFactorError as exc:  # more replicas than live brokers
        raise InvalidRequestError(f"replicationFactor: {exc.message}") from exc
    if not created:
        raise StreamExistsError(f"stream {spec.name!r} already exists")
    return pb.CreateStreamResponse()


async def delete_stream(call: RpcCall, request: pb.DeleteStreamRequest) -> pb.DeleteStreamResponse:
    await admin.delete_stream(call.node, request.name)
    return pb.DeleteStreamResponse()


async def pause_stream(call: RpcCall, request: pb.PauseStreamRequest) -> pb.PauseStreamResponse:
    """Pause the partitions named (all when none), each until its own next publish or
    consumer fetch. ``resumeAll`` (Liftbridge: a publish to one resumes them all) changes
    nothing here: no partition loses a publish while paused, each resumes at its first."""
    admin.refuse_internal(request.name, "paused or resumed")
    count = await _partition_count(call, request.name)
    store = call.node.store
    for partition in _named_partitions(request.name, request.partitions, count):
        await asyncio.to_thread(store.set_idle_paused, request.name, partition, True)
    await call.node.reconcile_now()
    return pb.PauseStreamResponse()


async def set_stream_readonly(
    call: RpcCall, request: pb.SetStreamReadonlyRequest
) -> pb.SetStreamReadonlyResponse:
    """Read-only is a property of the whole stream in Liftlog: the partitions named must be
    all of them (or none)."""
    count = await _partition_count(call, request.name)
    named = _named_partitions(request.name, request.partitions, count)
    if len(named) != count:
        raise InvalidRequestError(
            f"partitions {sorted(named)}: a Liftlog stream is read-only as a whole; "
            f"name every partition of {request.name!r} (0..{count - 1}) or none"
        )
    await admin.set_read_only(call.node, request.name, request.readonly)
    return pb.SetStreamReadonlyResponse()


async def _partition_count(call: RpcCall, name: str) -> int:
    """NOT_FOUND (stream_not_found) for an unknown stream."""
    record = await asyncio.to_thread(call.node.store.get, name)
    return record.spec.partitions


def _named_partitions(name: str, requested: Iterable[int], count: int) -> set[int]:
    """The partitions a request names (every one when it names none); NOT_FOUND for one the
    stream does not have."""
    named = set(requested) or set(range(count))
    unknown = sorted(p for p in named if not 0 <= p < count)
    if unknown:
        raise PartitionNotFoundError(
            f"stream {name!r} has no partition {', '.join(map(str, unknown))} "
            f"(partitions 0..{count - 1})"
        )
    return named
