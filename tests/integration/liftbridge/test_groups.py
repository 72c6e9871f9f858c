"""The consumer group RPCs on three real nodes: Liftbridge members on our coordinator.

Each consumer speaks Liftbridge's protocol as a client would: join, then fetch its
assignment with the epoch it was last given, consuming exactly what the answer lists. Members
call different nodes, so most calls are forwarded to the group's coordinator.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest

from liftlog.embedded.node import NodeProcess
from spark_log.groups_config import GroupsConfig
from spark_log.liftbridge import api_pb2 as pb
from spark_log.liftbridge.api_pb2_grpc import APIStub
from tests.integration.conftest import NODE_ZK_SESSION_TIMEOUT_S, create_stream, node_client
from tests.support.liftbridge_client import liftbridge_stub
from tests.support.waiting import wait_for_async

SESSION_MS = 5_000
GROUPS = GroupsConfig(min_session_timeout_ms=1_000, session_timeout_ms=SESSION_MS)
PARTITIONS = 4
TopicPartition = tuple[str, int]


@pytest.fixture(scope="module")
def cluster(make_module_node: Any) -> list[NodeProcess]:
    return [make_module_node(i, groups=GROUPS) for i in (1, 2, 3)]


@pytest.fixture
async def stubs(cluster: list[NodeProcess]) -> AsyncIterator[list[APIStub]]:
    """A Liftbridge stub of each node, in broker id order."""
    async with AsyncExitStack() as stack:
        yield [
            await stack.enter_async_context(liftbridge_stub(n.config.advertised_liftbridge_address))
            for n in cluster
        ]


@dataclass
class Consumer:
    """A Liftbridge group member: it consumes exactly what its last answer listed."""

    stub: APIStub
    group: str
    consumer_id: str
    epoch: int = 0
    assigned: set[TopicPartition] = field(default_factory=set)

    async def join(self, streams: list[str]) -> pb.JoinConsumerGroupResponse:
        request = pb.JoinConsumerGroupRequest(
            groupId=self.group, consumerId=self.consumer_id, streams=streams
        )
        joined = await self.stub.JoinConsumerGroup(request)
        self.epoch = joined.epoch
        return joined

    async def fetch(self) -> set[TopicPartition]:
        answer = await self.stub.FetchConsumerGroupAssignments(
            pb.FetchConsumerGroupAssignmentsRequest(
                groupId=self.group, consumerId=self.consumer_id, epoch=self.epoch
            )
        )
        self.epoch = answer.epoch
        self.assigned = {(a.stream, p) for a in answer.assignments for p in a.partitions}
        return self.assigned

    async def leave(self) -> None:
        request = pb.LeaveConsumerGroupRequest(groupId=self.group, consumerId=self.consumer_id)
        await self.stub.LeaveConsumerGroup(request)


async def _code(call: Any) -> grpc.StatusCode:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return caught.value.code()


def _streams(cluster: list[NodeProcess], *names: str) -> set[TopicPartition]:
    with node_client(cluster[0].api_url) as api:
        for name in names:
            create_stream(api, name, partitions=PARTITIONS)
    return {(name, p) for name in names for p in range(PARTITIONS)}


async def _settle(members: list[Consumer], every: set[TopicPartition]) -> None:
    """Heartbeat every member in turn until they hold ``every`` partition between them;
    at no step may two members consume the same partition."""

    async def round_done() -> bool:
        for member in members:
            await member.fetch()
            held = [tp for m in members for tp in m.assigned]
            assert len(held) == len(set(held)), f"a partition consumed twice: {sorted(held)}"
        return set(held) == every

    await wait_for_async(round_done, message="the group to assign every partition")


async def test_members_split_two_streams_and_rebalance(
    cluster: list[NodeProcess], stubs: list[APIStub], stream_name: str
) -> None:
    every = _streams(cluster, f"{stream_name}-a", f"{stream_name}-b")
    names = sorted({s for s, _ in every})
    group = f"split-{stream_name}"
    first, second = Consumer(stubs[0], group, "c1"), Consumer(stubs[1], group, "c2")
    joined = await first.join(names)
    with node_client(cluster[2].api_url) as api:
        described = api.get(f"/v1/groups/{group}").json()
    assert joined.coordinator == str(described["coordinator"])
    assert joined.consumerTimeout == SESSION_MS * 1_000_000
    assert joined.coordinatorTimeout == int(NODE_ZK_SESSION_TIMEOUT_S * 1_000_000_000)
    await second.join(names)
    await _settle([first, second], every)
    for member in (first, second):  # balanced per stream: two partitions of each
        assert sorted(s for s, _ in member.assigned) == [names[0]] * 2 + [names[1]] * 2

    before = first.epoch
    third = Consumer(stubs[2], group, "c3")
    await third.join(names)
    assert third.epoch > before
    await _settle([first, second, third], every)
    assert third.assigned and first.epoch == second.epoch == third.epoch > before

    await third.leave()
    await _settle([first, second], every)
    assert first.epoch > third.epoch
    code = await _code(third.fetch())
    assert code == grpc.StatusCode.FAILED_PRECONDITION


async def test_any_node_serves_a_member(
    cluster: list[NodeProcess], stubs: list[APIStub], stream_name: str
) -> None:
    """A member whose calls reach different nodes keeps its assignment."""
    every = _streams(cluster, stream_name)
    member = Consumer(stubs[0], f"roam-{stream_name}", "c1")
    await member.join([stream_name])
    for stub in (*stubs, *stubs):
        member.stub = stub
        assert await member.fetch() == every


async def test_stale_epochs_strangers_and_unknown_groups(
    cluster: list[NodeProcess], stubs: list[APIStub], stream_name: str
) -> None:
    every = _streams(cluster, stream_name)
    group = f"fence-{stream_name}"
    first, second = Consumer(stubs[0], group, "c1"), Consumer(stubs[0], group, "c2")
    await first.join([stream_name])
    stale = first.epoch
    await second.join([stream_name])
    await _settle([first, second], every)
    assert first.epoch > stale
    first.epoch = stale
    assert await _code(first.fetch()) == grpc.StatusCode.FAILED_PRECONDITION
    await first.join([stream_name])  # joining again is how a member recovers
    await _settle([first, second], every)

    stranger = Consumer(stubs[1], group, "nobody")
    precondition = grpc.StatusCode.FAILED_PRECONDITION
    assert await _code(stranger.fetch()) == precondition
    assert await _code(stranger.leave()) == precondition
    unknown = Consumer(stubs[2], f"none-{stream_name}", "c1")
    assert await _code(unknown.fetch()) == grpc.StatusCode.NOT_FOUND
    assert await _code(unknown.leave()) == grpc.StatusCode.NOT_FOUND
    missing = Consumer(stubs[2], group, "c1")
    assert await _code(missing.join(["no-such-stream"])) == grpc.StatusCode.NOT_FOUND


async def test_missing_arguments_are_invalid(stubs: list[APIStub], stream_name: str) -> None:
    lb = stubs[1]
    calls = [
        lb.JoinConsumerGroup(pb.JoinConsumerGroupRequest(consumerId="c", streams=["s"])),
        lb.JoinConsumerGroup(pb.JoinConsumerGroupRequest(groupId="g", streams=["s"])),
        lb.JoinConsumerGroup(pb.JoinConsumerGroupRequest(groupId="g", consumerId="c")),
        lb.LeaveConsumerGroup(pb.LeaveConsumerGroupRequest(groupId="g")),
        lb.FetchConsumerGroupAssignments(pb.FetchConsumerGroupAssignmentsRequest(consumerId="c")),
        lb.ReportConsumerGroupCoordinator(
            pb.ReportConsumerGroupCoordinatorRequest(groupId="g", consumerId="c")
        ),
    ]
    for call in calls:
        assert await _code(call) == grpc.StatusCode.INVALID_ARGUMENT


async def test_a_reported_coordinator_is_acknowledged(
    cluster: list[NodeProcess], stubs: list[APIStub], stream_name: str
) -> None:
    """Our controller replaces a coordinator, not the members' votes: the report is taken
    and the member keeps its assignment from the same coordinator."""
    every = _streams(cluster, stream_name)
    member = Consumer(stubs[0], f"report-{stream_name}", "c1")
    joined = await member.join([stream_name])
    report = pb.ReportConsumerGroupCoordinatorRequest(
        groupId=member.group, consumerId="c1", coordinator=joined.coordinator, epoch=member.epoch
    )
    await stubs[1].ReportConsumerGroupCoordinator(report)
    assert await member.fetch() == every


async def test_a_silent_member_expires(
    cluster: list[NodeProcess], stubs: list[APIStub], stream_name: str
) -> None:
    every = _streams(cluster, stream_name)
    group = f"expiry-{stream_name}"
    alive, silent = Consumer(stubs[0], group, "alive"), Consumer(stubs[1], group, "silent")
    await alive.join([stream_name])
    await silent.join([stream_name])
    await _settle([alive, silent], every)
    assert silent.assigned

    async def alone() -> bool:
        return await alive.fetch() == every

    await wait_for_async(alone, timeout_s=SESSION_MS / 1000 * 4, interval_s=0.5)
    assert await _code(silent.fetch()) == grpc.StatusCode.FAILED_PRECONDITION


async def test_members_subscribe_only_to_their_partitions(
    cluster: list[NodeProcess], stubs: list[APIStub], stream_name: str
) -> None:
    every = _streams(cluster, stream_name)
    group = f"subs-{stream_name}"
    first, second = Consumer(stubs[0], group, "c1"), Consumer(stubs[1], group, "c2")
    await first.join([stream_name])
    await second.join([stream_name])
    await _settle([first, second], every)
    with node_client(cluster[0].api_url) as api:
        leaders = {
            p["partition"]: p["leader"]
            for p in api.get(f"/v1/streams/{stream_name}").json()["partitions"]
        }
    mine = sorted(first.assigned)[0][1]
    theirs = sorted(second.assigned)[0][1]

    async def subscribe(partition: int, epoch: int, consumer: str = "c1") -> pb.Message:
        leader = stubs[leaders[partition] - 1]
        request = pb.SubscribeRequest(
            stream=stream_name,
            partition=partition,
            startPosition=pb.StartPosition.EARLIEST,
            consumer=pb.Consumer(groupId=group, groupEpoch=epoch, consumerId=consumer),
        )
        call = leader.Subscribe(request)
        try:
            message: pb.Message = await call.read()
            return message
        finally:
            call.cancel()

    assert await subscribe(mine, first.epoch) == pb.Message()  # the handshake
    precondition = grpc.StatusCode.FAILED_PRECONDITION
    assert await _code(subscribe(theirs, first.epoch)) == precondition
    assert await _code(subscribe(mine, first.epoch + 1)) == precondition
    assert await _code(subscribe(mine, first.epoch, consumer="nobody")) == precondition
