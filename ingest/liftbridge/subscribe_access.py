"""Which replica serves a Liftbridge subscription, checked before its handshake.

The partition's leader serves it; with ``readISRReplica`` any replica in the ISR does (every
record below its HW is committed). A group member must have been assigned the partition and
cannot read from a follower. ``resume`` resumes a paused partition first, as Liftbridge does:
an operator's pause through the same admin operation as REST (so it needs the PAUSE right),
a pause for idleness as a consumer fetch would.
"""

from __future__ import annotations

import asyncio

from ingest.admin import streams as admin
from ingest.liftbridge import groups
from ingest.liftbridge.calls import RpcCall
from ingest.replica.replica import PartitionReplica
from ingest.replication.partition_state import Partition
from spark_log.auth import Action, stream_resource
from spark_log.errors import InvalidRequestError, NotLeaderError
from spark_log.liftbridge import api_pb2 as pb


async def serving_replica(call: RpcCall, request: pb.SubscribeRequest) -> PartitionReplica:
    """The replica on this node that may serve ``request`` (resumed when it asks);
    NOT_FOUND, FAILED_PRECONDITION or INVALID_ARGUMENT otherwise."""
    group = request.consumer.groupId if request.HasField("consumer") else ""
    if group and not request.consumer.consumerId:
        raise InvalidRequestError("consumer.consumerId is required with consumer.groupId")
    replica = call.node.replicas.replica(request.stream, request.partition)
    if group and request.readISRReplica and not replica.state.is_leader:
        raise InvalidRequestError("a consumer group member cannot subscribe with readISRReplica")
    check_serves(replica.state, request.readISRReplica)
    if group:
        await groups.check_member_assignment(
            call, request.consumer, request.stream, request.partition
        )
    if request.resume:
        await resume_partition(call, replica)
        replica = call.node.replicas.replica(request.stream, request.partition)
        check_serves(replica.state, request.readISRReplica)
    return replica


def check_serves(state: Partition, read_isr_replica: bool) -> None:
    """NotLeaderError (FAILED_PRECONDITION, on which clients refresh their metadata and
    subscribe again) unless this replica may serve: the leader, or with
    ``read_isr_replica`` an ISR member."""
    if state.is_leader:
        return
    if not read_isr_replica:
        raise NotLeaderError(
            f"broker {state.broker_id} does not lead {state.name} (leader: {state.leader_id}); "
            "subscribe at the leader or with readISRReplica"
        )
    if state.broker_id not in state.isr:
        raise NotLeaderError(
            f"broker {state.broker_id} is not in the ISR {state.isr} of {state.name}"
        )


async def resume_partition(call: RpcCall, replica: PartitionReplica) -> None:
    """Resume the stream if an operator paused it, else the partition if it was paused
    for idleness (by its leader's own resume when this node leads it)."""
    name = replica.spec.name
    view = call.node.replicas.streams.get(name)
    if view is None:
        return
    if view.record.paused:
        call.require(Action.RESUME, stream_resource(name))
        await admin.set_paused(call.node, name, False)
    elif replica.state.is_leader:
        await replica.idle.resume()
    elif replica.partition in view.record.idle_paused_partitions:
        await asyncio.to_thread(call.node.store.set_idle_paused, name, replica.partition, False)
