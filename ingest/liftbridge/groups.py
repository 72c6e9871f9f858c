"""The consumer group RPCs, on the node's ``GroupService`` (our KIP-848 style coordinator).

Liftbridge's group protocol maps onto ours: JoinConsumerGroup is a join under the client's
consumer id, FetchConsumerGroupAssignments a heartbeat (member_answers.py supplies the member
epoch and owned partitions a Liftbridge client does not send), LeaveConsumerGroup a leave.
The epoch a client sees is our group epoch; the coordinator is the leader of the group's
``__cursors`` partition, reached from any node by the service's forwarding. Consume on every
stream of the group is checked per call, as the REST group routes do.
"""

from __future__ import annotations

import asyncio
import time
import weakref

from coordinator.znodes import NO_LEADER
from ingest.groups.coordinator import GROUP_CURSOR_PREFIX, group_cursor_id, validate_group_id
from ingest.groups.service import GroupService, StreamCheck
from ingest.liftbridge.assignment_check import check_assignment
from ingest.liftbridge.calls import RpcCall
from ingest.liftbridge.member_answers import MemberAnswers
from spark_log.api_models import GroupDescription
from spark_log.auth import Action, stream_resource
from spark_log.cursor_record import MAX_CURSOR_ID_LENGTH, cursors_partition
from spark_log.errors import (
    FencedMemberError,
    GroupManagedError,
    GroupNotFoundError,
    InvalidRequestError,
    StaleMemberEpochError,
    UnavailableError,
)
from spark_log.json_types import JsonObject
from spark_log.liftbridge import api_pb2 as pb
from spark_log.stream_spec import CURSORS_STREAM

NS_PER_MS = 1_000_000
NS_PER_S = 1_000_000_000

_answers: weakref.WeakKeyDictionary[GroupService, MemberAnswers] = weakref.WeakKeyDictionary()


async def join_group(
    call: RpcCall, request: pb.JoinConsumerGroupRequest
) -> pb.JoinConsumerGroupResponse:
    """Join (or join again: our coordinator takes a known consumer id back with nothing
    owned, where Liftbridge refuses it). ``consumerTimeout`` is the member's session,
    ``coordinatorTimeout`` the time the controller takes to replace a dead coordinator."""
    _require_member(request.groupId, request.consumerId)
    if not request.streams:
        raise InvalidRequestError("no streams provided")
    for stream in request.streams:
        call.require(Action.CONSUME, stream_resource(stream))
    body: JsonObject = {
        "member_id": request.consumerId,
        "streams": [str(stream) for stream in request.streams],
        "client_host": _peer_host(call.context.peer()),
    }
    answer = await call.services.groups.join(request.groupId, body, forwarded=False)
    _member_answers(call).remember(answer, time.monotonic())
    return pb.JoinConsumerGroupResponse(
        coordinator=str(await coordinator_id(call, request.groupId)),
        epoch=answer.group_epoch,
        consumerTimeout=answer.session_timeout_ms * NS_PER_MS,
        coordinatorTimeout=int(call.node.config.zk_session_timeout_s * NS_PER_S),
    )


async def leave_group(
    call: RpcCall, request: pb.LeaveConsumerGroupRequest
) -> pb.LeaveConsumerGroupResponse:
    _require_member(request.groupId, request.consumerId)
    groups = call.services.groups
    try:
        await groups.leave(request.groupId, request.consumerId, _checker(call), forwarded=False)
    except FencedMemberError:
        _member_answers(call).forget(request.groupId, request.consumerId)
        await _raise_if_no_group(call, request.groupId)
        raise
    # only once the leave was allowed: a caller refused on the member's streams must not
    # reset what this node remembers of the member
    _member_answers(call).forget(request.groupId, request.consumerId)
    return pb.LeaveConsumerGroupResponse()


async def fetch_assignments(
    call: RpcCall, request: pb.FetchConsumerGroupAssignmentsRequest
) -> pb.FetchConsumerGroupAssignmentsResponse:
    """The heartbeat: keeps the session and answers the member's assignment (never the
    partitions it is giving up). A stale epoch or a consumer the group does not know:
    FAILED_PRECONDITION, after which a client joins again; an unknown group: NOT_FOUND."""
    group, consumer = request.groupId, request.consumerId
    _require_member(group, consumer)
    answers = _member_answers(call)
    try:
        beat = answers.heartbeat(group, consumer, request.epoch, time.monotonic())
        answer = await call.services.groups.heartbeat(
            group, consumer, beat.member_epoch, beat.owned, _checker(call), forwarded=False
        )
    except (FencedMemberError, StaleMemberEpochError):
        answers.forget(group, consumer)
        await _raise_if_no_group(call, group)
        raise
    if request.epoch > answer.group_epoch:
        answers.forget(group, consumer)
        raise FencedMemberError(
            f"consumer {consumer} sent epoch {request.epoch}, newer than the epoch "
            f"{answer.group_epoch} of group {group}: join it again"
        )
    answers.remember(answer, time.monotonic())
    return pb.FetchConsumerGroupAssignmentsResponse(
        epoch=answer.group_epoch,
        assignments=[
            pb.PartitionAssignment(stream=stream, partitions=partitions)
            for stream, partitions in sorted(answer.assigned.items())
        ],
    )


async def report_coordinator(
    call: RpcCall, request: pb.ReportConsumerGroupCoordinatorRequest
) -> pb.ReportConsumerGroupCoordinatorResponse:
    """Accepted and ignored: our coordinator is the leader of a ``__cursors`` partition,
    replaced by the controller when its broker's ZooKeeper session ends, not by members'
    votes. A member that reported it finds the new one by joining again."""
    _require_member(request.groupId, request.consumerId)
    if not request.coordinator:
        raise InvalidRequestError("no coordinator provided")
    return pb.ReportConsumerGroupCoordinatorResponse()


async def check_member_assignment(
    call: RpcCall, consumer: pb.Consumer, stream: str, partition: int
) -> None:
    """Refuse (FAILED_PRECONDITION) a group member's subscription to a partition the group
    did not assign it in ``consumer.groupEpoch``."""
    _require_member(consumer.groupId, consumer.consumerId)
    try:
        described = await _describe(call, consumer.groupId)
    except GroupNotFoundError as exc:
        raise FencedMemberError(
            f"group {consumer.groupId} has no members: join it before subscribing"
        ) from exc
    check_assignment(described, consumer.consumerId, consumer.groupEpoch, stream, partition)


async def coordinator_id(call: RpcCall, group: str) -> int:
    """The broker leading the group's ``__cursors`` partition, as this node last saw it."""
    partitions = await call.services.cursors.partitions()
    partition = cursors_partition(group_cursor_id(group), partitions)
    view = call.node.replicas.streams.get(CURSORS_STREAM)
    state = view.states.get(partition) if view is not None else None
    if state is None or state.leader == NO_LEADER:
        states = await asyncio.to_thread(call.node.store.partition_states, CURSORS_STREAM)
        state, _version = states[partition]
    if state.leader == NO_LEADER:
        raise UnavailableError(f"{CURSORS_STREAM}/{partition} has no leader: retry")
    return state.leader


def _member_answers(call: RpcCall) -> MemberAnswers:
    """This node's answers (one ``GroupService`` per node, shared with REST)."""
    groups = call.services.groups
    answers = _answers.get(groups)
    if answers is None:
        forget_after_s = call.node.config.groups.max_session_timeout_ms / 1000
        answers = _answers[groups] = MemberAnswers(forget_after_s)
    return answers


def _checker(call: RpcCall) -> StreamCheck:
    def check(stream: str) -> None:
        call.require(Action.CONSUME, stream_resource(stream))

    return check


async def _describe(call: RpcCall, group: str) -> GroupDescription:
    """The group's members and epochs. A local coordinator skips the partitions' offsets
    (nothing here needs them, and each asks a partition's leader); a remote one's REST
    describe includes them, a cost paid on refusals and group subscriptions only."""
    return await call.services.groups.describe(group, lambda _stream: False, forwarded=False)


async def _raise_if_no_group(call: RpcCall, group: str) -> None:
    """GroupNotFoundError (NOT_FOUND) when the group has no member: Liftbridge deletes a
    group with its last member, so a group without members is no group to its clients."""
    if not (await _describe(call, group)).members:
        raise GroupNotFoundError(f"consumer group {group!r} has no members")


def _require_member(group: str, consumer: str) -> None:
    if not group:
        raise InvalidRequestError("no groupId provided")
    if not consumer:
        raise InvalidRequestError("no consumerId provided")
    validate_group_id(group)
    if len(consumer) > MAX_CURSOR_ID_LENGTH or not consumer.isprintable() or "/" in consumer:
        raise InvalidRequestError(
            f"invalid consumerId {consumer[:60]!r}: 1 to {MAX_CURSOR_ID_LENGTH} printable "
            "characters, no '/'"
        )


def _peer_host(peer: str) -> str | None:
    """The caller's address from gRPC's ``ipv4:1.2.3.4:5``, ``ipv6:[::1]:5`` (None else)."""
    kind, _, address = peer.partition(":")
    if kind not in ("ipv4", "ipv6") or not address:
        return None
    host = address.rsplit(":", 1)[0]
    return host.strip("[]") or None


async def refuse_unassigned_checkpoint(
    call: RpcCall, cursor_id: str, stream: str, partition: int
) -> None:
    """A ``__group:<group>`` cursor is where a Liftbridge group consumer checkpoints its
    progress (go-liftbridge's consumers do, through SetCursor) and where our group commits
    live. While the group has members, such a write is taken only for a partition the group
    assigned to one of them, so a checkpoint of the member consuming it lands and a stray
    write to another partition is refused (GroupManagedError, FAILED_PRECONDITION)."""
    if not cursor_id.startswith(GROUP_CURSOR_PREFIX):
        return
    group = cursor_id[len(GROUP_CURSOR_PREFIX) :]
    validate_group_id(group)
    try:
        described = await _describe(call, group)
    except GroupNotFoundError:
        return
    assigned = any(partition in m.assigned.get(stream, ()) for m in described.members)
    if described.members and not assigned:
        raise GroupManagedError(
            f"cursor {cursor_id!r} holds the commits of group {group!r}, which has members "
            f"and assigns {stream}/{partition} to none of them"
        )
