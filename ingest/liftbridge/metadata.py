"""FetchMetadata and FetchPartitionMetadata, answered by any node.

Both read what ``GET /v1/cluster`` and ``GET /v1/streams/{name}`` read: the live brokers'
registrations, and each stream's description, whose offsets come from each partition's
leader (asked over REST when it is another node). A partition whose leader does not answer
shows offset -1 in FetchMetadata; FetchPartitionMetadata, which clients ask for exact offsets,
answers FAILED_PRECONDITION for it instead, so that they refresh and retry.
"""

from __future__ import annotations

import asyncio

from ingest.admin import streams as admin
from ingest.liftbridge.calls import RpcCall
from ingest.liftbridge.metadata_mapping import (
    BrokerLoad,
    brokers,
    partition_metadata,
    stream_metadata,
    unknown_group,
    unknown_stream,
)
from spark_log.auth import Action, stream_resource
from spark_log.errors import (
    GroupNotFoundError,
    InvalidRequestError,
    NotLeaderError,
    PartitionNotFoundError,
    StreamNotFoundError,
)
from spark_log.liftbridge import api_pb2 as pb
from spark_log.stream_spec import CURSORS_STREAM


async def fetch_metadata(
    call: RpcCall, request: pb.FetchMetadataRequest
) -> pb.FetchMetadataResponse:
    """The requested streams (every stream the caller may describe when none is named,
    the nodes' own ``__cursors`` included: clients find its partition leaders here) and
    groups; a stream the caller may not describe is as unknown as one that does not exist."""
    if not request.streams or CURSORS_STREAM in request.streams:
        # Liftbridge clients look up the leader of __cursors partition 0 here before their
        # first cursor call (and wait until it shows): it exists from the first such look
        await call.services.cursors.partitions()
    names = list(request.streams) or await _describable_streams(call)
    described = await asyncio.gather(*(_stream(call, name) for name in names))
    groups = [await _group(call, group) for group in request.groups]
    return pb.FetchMetadataResponse(
        brokers=brokers(await call.node.live_brokers(), await _broker_load(call)),
        streamMetadata=[
            m for m in described if request.streams or m.error != pb.StreamMetadata.UNKNOWN_STREAM
        ],
        groupMetadata=groups,
    )


async def fetch_partition_metadata(
    call: RpcCall, request: pb.FetchPartitionMetadataRequest
) -> pb.FetchPartitionMetadataResponse:
    """One partition as its leader reports it, on any node (the leader is asked over REST)."""
    described = await admin.describe_stream(call.node, request.stream, compaction=False)
    try:
        state = described.partition(request.partition)
    except KeyError:
        raise PartitionNotFoundError(
            f"stream {request.stream!r} has no partition {request.partition}"
        ) from None
    if state.high_watermark is None:
        raise NotLeaderError(
            f"{request.stream}/{request.partition} has no leader that answers: "
            "refresh the metadata and retry"
        )
    paused = described.paused or request.partition in described.idle_paused_partitions
    return pb.FetchPartitionMetadataResponse(
        metadata=partition_metadata(state, paused=paused, readonly=described.read_only)
    )


async def _describable_streams(call: RpcCall) -> list[str]:
    return [
        s.name
        for s in await admin.list_streams(call.node)
        if call.allows(Action.DESCRIBE, stream_resource(s.name))
    ]


async def _stream(call: RpcCall, name: str) -> pb.StreamMetadata:
    if not call.allows(Action.DESCRIBE, stream_resource(name)):
        return unknown_stream(name)
    try:
        return stream_metadata(await admin.describe_stream(call.node, name, compaction=False))
    except (StreamNotFoundError, InvalidRequestError):  # none, or not a stream name at all
        return unknown_stream(name)


async def _group(call: RpcCall, group: str) -> pb.ConsumerGroupMetadata:
    """The group's coordinator (the leader of its ``__cursors`` partition) and epoch."""

    def visible(stream: str) -> bool:
        return call.allows(Action.DESCRIBE, stream_resource(stream))

    try:
        described = await call.services.groups.describe(group, visible, forwarded=False)
    except (GroupNotFoundError, InvalidRequestError):
        return unknown_group(group)
    return pb.ConsumerGroupMetadata(
        groupId=group, coordinator=str(described.coordinator), epoch=described.group_epoch
    )


async def _broker_load(call: RpcCall) -> BrokerLoad:
    """Partitions and leaderships per broker over every stream, as the controller recorded
    them (ZooKeeper reads only: no leader is asked)."""
    load = BrokerLoad()
    store = call.node.store
    for record in await asyncio.to_thread(store.list):
        try:
            states = await asyncio.to_thread(store.partition_states, record.spec.name)
        except StreamNotFoundError:  # deleted meanwhile
            continue
        for state, _version in states.values():
            load.add(state.replicas, state.leader)
    return load
