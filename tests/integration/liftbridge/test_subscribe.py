"""Subscribe on one node: the empty handshake first, then committed records from every start
position to every stop position, ended with RESOURCE_EXHAUSTED at the stop; keys, headers,
subjects and nanosecond timestamps as Liftbridge's clients read them; refusals before the
handshake; and a cancelled subscription ends on the server."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import grpc
import httpx
import pytest

from spark_log.liftbridge import api_pb2 as pb
from spark_log.liftbridge import api_pb2_grpc
from tests.integration.conftest import create_stream, fetch
from tests.support.waiting import wait_for_async

NS_PER_MS = 1_000_000
READ_TIMEOUT_S = 10.0
SUBSCRIPTIONS_METRIC = re.compile(r"^liftlog_liftbridge_subscriptions (\S+)$", re.MULTILINE)

Subscription = grpc.aio.UnaryStreamCall[pb.SubscribeRequest, pb.Message]


def publish(api: httpx.Client, stream: str, *records: dict[str, Any]) -> None:
    resp = api.post(
        f"/v1/streams/{stream}/partitions/0/records",
        json={"records": list(records)},
        params={"encoding": "utf-8"},
    )
    assert resp.status_code == 200, resp.text


def publish_values(api: httpx.Client, stream: str, *values: str) -> None:
    publish(api, stream, *({"value": v} for v in values))


async def read_to_end(call: Subscription) -> tuple[list[pb.Message], grpc.StatusCode]:
    """Every message of a subscription that ends by itself, and its final status."""
    messages: list[pb.Message] = []
    try:
        async with asyncio.timeout(READ_TIMEOUT_S):
            while (message := await call.read()) is not grpc.aio.EOF:
                assert isinstance(message, pb.Message)
                messages.append(message)
    except grpc.aio.AioRpcError as exc:
        return messages, exc.code()
    return messages, await call.code()


async def read(call: Subscription, count: int) -> list[pb.Message]:
    """The next ``count`` messages of a subscription that goes on."""
    got = []
    for _ in range(count):
        message = await asyncio.wait_for(call.read(), READ_TIMEOUT_S)
        assert isinstance(message, pb.Message)
        got.append(message)
    return got


async def handshake(call: Subscription) -> None:
    assert await read(call, 1) == [pb.Message()]


def offsets(messages: list[pb.Message]) -> list[int]:
    return [m.offset for m in messages]


async def refusal(lb: api_pb2_grpc.APIStub, request: pb.SubscribeRequest) -> grpc.StatusCode:
    """The status a subscription is refused with, before any message (no handshake)."""
    messages, code = await read_to_end(lb.Subscribe(request))
    assert messages == []
    return code


def active_subscriptions(api: httpx.Client) -> float:
    found = SUBSCRIPTIONS_METRIC.search(api.get("/metrics").text)
    assert found is not None
    return float(found.group(1))


async def test_the_handshake_comes_first_then_records_with_their_fields_until_stop_latest(
    api, lb, stream_name
):
    create_stream(api, stream_name)
    publish(
        api,
        stream_name,
        {"value": "one", "key": "k1", "headers": {"trace": "abc", "kind": "x"}},
        {"value": "two"},
    )
    stored = fetch(api, stream_name)["records"]
    request = pb.SubscribeRequest(
        stream=stream_name, startPosition=pb.EARLIEST, stopPosition=pb.STOP_LATEST
    )
    messages, code = await read_to_end(lb.Subscribe(request))
    assert messages[0] == pb.Message()
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    first, second = messages[1:]
    assert (first.offset, first.key, first.value) == (0, b"k1", b"one")
    # the stored headers as they are (REST's publish keeps the key in Liftlog-Key too)
    assert dict(first.headers) == {"trace": b"abc", "kind": b"x", "Liftlog-Key": b"k1"}
    assert (first.stream, first.partition, first.subject) == (stream_name, 0, f"{stream_name}.in")
    assert (second.offset, second.key, second.value, dict(second.headers)) == (1, b"", b"two", {})
    assert [m.timestamp for m in (first, second)] == [r["timestamp"] * NS_PER_MS for r in stored]
    assert not first.replySubject and not first.ackInbox and not first.correlationId


async def test_new_only_sends_only_what_comes_after_and_follows_until_cancelled(
    api, lb, stream_name
):
    create_stream(api, stream_name)
    publish_values(api, stream_name, "a", "b")
    call = lb.Subscribe(pb.SubscribeRequest(stream=stream_name, startPosition=pb.NEW_ONLY))
    await handshake(call)
    publish_values(api, stream_name, "c")
    publish_values(api, stream_name, "d")
    assert [(m.offset, m.value) for m in await read(call, 2)] == [(2, b"c"), (3, b"d")]
    call.cancel()


async def test_latest_starts_at_the_newest_committed_record(api, lb, stream_name):
    create_stream(api, stream_name)
    publish_values(api, stream_name, "a", "b", "c")
    call = lb.Subscribe(pb.SubscribeRequest(stream=stream_name, startPosition=pb.LATEST))
    await handshake(call)
    assert offsets(await read(call, 1)) == [2]
    publish_values(api, stream_name, "d")
    assert offsets(await read(call, 1)) == [3]
    call.cancel()


async def test_an_offset_start_and_an_inclusive_stop_offset(api, lb, stream_name):
    create_stream(api, stream_name)
    publish_values(api, stream_name, *"abcde")
    request = pb.SubscribeRequest(
        stream=stream_name,
        startPosition=pb.OFFSET,
        startOffset=1,
        stopPosition=pb.STOP_OFFSET,
        stopOffset=3,
    )
    messages, code = await read_to_end(lb.Subscribe(request))
    assert offsets(messages[1:]) == [1, 2, 3]
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED


async def test_a_stop_offset_not_yet_written_is_waited_for(api, lb, stream_name):
    create_stream(api, stream_name)
    publish_values(api, stream_name, "a")
    request = pb.SubscribeRequest(
        stream=stream_name, startPosition=pb.EARLIEST, stopPosition=pb.STOP_OFFSET, stopOffset=2
    )
    call = lb.Subscribe(request)
    await handshake(call)
    assert offsets(await read(call, 1)) == [0]
    publish_values(api, stream_name, "b", "c", "d")
    messages, code = await read_to_end(call)
    assert offsets(messages) == [1, 2]
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED


async def test_an_offset_beyond_the_end_is_waited_for(api, lb, stream_name):
    create_stream(api, stream_name)
    publish_values(api, stream_name, "a")
    request = pb.SubscribeRequest(stream=stream_name, startPosition=pb.OFFSET, startOffset=3)
    call = lb.Subscribe(request)
    await handshake(call)
    publish_values(api, stream_name, "b", "c", "d", "e")
    assert [(m.offset, m.value) for m in await read(call, 2)] == [(3, b"d"), (4, b"e")]
    call.cancel()


async def test_timestamps_in_nanoseconds_start_and_stop_a_subscription(api, lb, stream_name):
    create_stream(api, stream_name)
    publish_values(api, stream_name, "a", "b")
    first_batch_ms = fetch(api, stream_name)["records"][-1]["timestamp"]
    await wait_for_async(
        lambda: time.time_ns() // NS_PER_MS > first_batch_ms, message="the clock to move on"
    )
    publish_values(api, stream_name, "c", "d")
    second_ms = fetch(api, stream_name)["records"][2]["timestamp"]
    assert second_ms > first_batch_ms

    by_time = pb.SubscribeRequest(
        stream=stream_name,
        startPosition=pb.TIMESTAMP,
        startTimestamp=first_batch_ms * NS_PER_MS + 1,  # just after the first batch
        stopPosition=pb.STOP_LATEST,
    )
    messages, code = await read_to_end(lb.Subscribe(by_time))
    assert offsets(messages[1:]) == [2, 3] and code == grpc.StatusCode.RESOURCE_EXHAUSTED

    until_time = pb.SubscribeRequest(
        stream=stream_name,
        startPosition=pb.EARLIEST,
        stopPosition=pb.STOP_TIMESTAMP,
        stopTimestamp=second_ms * NS_PER_MS - 1,  # just before the second batch
    )
    messages, code = await read_to_end(lb.Subscribe(until_time))
    assert offsets(messages[1:]) == [0, 1] and code == grpc.StatusCode.RESOURCE_EXHAUSTED


async def test_a_stop_behind_the_start_ends_right_after_the_handshake(api, lb, stream_name):
    create_stream(api, stream_name)
    on_empty = pb.SubscribeRequest(stream=stream_name, stopPosition=pb.STOP_LATEST)
    assert await read_to_end(lb.Subscribe(on_empty)) == (
        [pb.Message()],
        grpc.StatusCode.RESOURCE_EXHAUSTED,
    )
    publish_values(api, stream_name, *"abcd")
    behind = pb.SubscribeRequest(
        stream=stream_name,
        startPosition=pb.OFFSET,
        startOffset=3,
        stopPosition=pb.STOP_OFFSET,
        stopOffset=1,
    )
    assert await read_to_end(lb.Subscribe(behind)) == (
        [pb.Message()],
        grpc.StatusCode.RESOURCE_EXHAUSTED,
    )


async def test_a_read_only_partition_ends_a_subscription_at_its_last_record(api, lb, stream_name):
    create_stream(api, stream_name)
    publish_values(api, stream_name, "a", "b")
    assert api.post(f"/v1/streams/{stream_name}/readonly").status_code == 200
    request = pb.SubscribeRequest(stream=stream_name, startPosition=pb.EARLIEST)
    messages, code = await read_to_end(lb.Subscribe(request))
    assert offsets(messages[1:]) == [0, 1]
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED


async def test_resume_resumes_a_paused_stream_before_subscribing(api, lb, stream_name):
    create_stream(api, stream_name)
    publish_values(api, stream_name, "a")
    assert api.post(f"/v1/streams/{stream_name}/pause").json()["paused"] is True
    request = pb.SubscribeRequest(stream=stream_name, startPosition=pb.EARLIEST, resume=True)
    call = lb.Subscribe(request)
    await handshake(call)
    assert api.get(f"/v1/streams/{stream_name}").json()["paused"] is False
    assert offsets(await read(call, 1)) == [0]
    publish_values(api, stream_name, "b")  # the stream takes records again
    assert offsets(await read(call, 1)) == [1]
    call.cancel()


async def test_refusals_come_before_the_handshake(api, lb, stream_name):
    create_stream(api, stream_name)
    missing = pb.SubscribeRequest(stream=f"{stream_name}-missing")
    assert await refusal(lb, missing) == grpc.StatusCode.NOT_FOUND
    no_partition = pb.SubscribeRequest(stream=stream_name, partition=3)
    assert await refusal(lb, no_partition) == grpc.StatusCode.NOT_FOUND
    nameless = pb.SubscribeRequest(stream=stream_name, consumer=pb.Consumer(groupId="g"))
    assert await refusal(lb, nameless) == grpc.StatusCode.INVALID_ARGUMENT
    negative = pb.SubscribeRequest(stream=stream_name, startPosition=pb.OFFSET, startOffset=-1)
    assert await refusal(lb, negative) == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize("records_first", [False, True])
async def test_a_cancelled_subscription_ends_on_the_server(
    api, lb, stream_name, records_first: bool
):
    """Cancelled while it long-polls at the HW, or while records are still to be sent."""
    create_stream(api, stream_name)
    await wait_for_async(lambda: active_subscriptions(api) == 0, message="no subscription")
    if records_first:
        publish_values(api, stream_name, *(f"v{i}" for i in range(3000)))
    call = lb.Subscribe(pb.SubscribeRequest(stream=stream_name, startPosition=pb.EARLIEST))
    await handshake(call)
    if records_first:
        assert offsets(await read(call, 1)) == [0]
    await wait_for_async(lambda: active_subscriptions(api) == 1, message="one subscription")
    call.cancel()
    await wait_for_async(lambda: active_subscriptions(api) == 0, message="it ended")
    publish_values(api, stream_name, "after")  # the node goes on serving
    assert fetch(api, stream_name, offset=0, max_records=1)["records"][0]["offset"] == 0


class Member:
    """A group member's heartbeats: each sends the epoch the last answer gave."""

    def __init__(self, lb: api_pb2_grpc.APIStub, group: str, consumer: str, epoch: int) -> None:
        self.lb, self.group, self.consumer, self.epoch = lb, group, consumer, epoch

    async def assigned_epoch(self) -> int | None:
        """The group epoch once the member is assigned a partition, else None."""
        request = pb.FetchConsumerGroupAssignmentsRequest(
            groupId=self.group, consumerId=self.consumer, epoch=self.epoch
        )
        answer = await self.lb.FetchConsumerGroupAssignments(request)
        self.epoch = int(answer.epoch)
        owned = [p for a in answer.assignments for p in a.partitions]
        return self.epoch if owned else None


async def test_a_group_member_subscribes_to_what_it_was_assigned(api, lb, stream_name):
    create_stream(api, stream_name)
    publish_values(api, stream_name, "a", "b")
    group = f"{stream_name}-group"
    join = pb.JoinConsumerGroupRequest(groupId=group, consumerId="c1", streams=[stream_name])
    joined = await lb.JoinConsumerGroup(join)
    member_c1 = Member(lb, group, "c1", int(joined.epoch))
    epoch = await wait_for_async(member_c1.assigned_epoch, message="an assignment")
    member = pb.SubscribeRequest(
        stream=stream_name,
        startPosition=pb.EARLIEST,
        stopPosition=pb.STOP_LATEST,
        consumer=pb.Consumer(groupId=group, consumerId="c1", groupEpoch=epoch),
    )
    messages, code = await read_to_end(lb.Subscribe(member))
    assert offsets(messages[1:]) == [0, 1] and code == grpc.StatusCode.RESOURCE_EXHAUSTED
    stranger = pb.SubscribeRequest(
        stream=stream_name, consumer=pb.Consumer(groupId=group, consumerId="c2", groupEpoch=epoch)
    )
    assert await refusal(lb, stranger) == grpc.StatusCode.FAILED_PRECONDITION
    await lb.LeaveConsumerGroup(pb.LeaveConsumerGroupRequest(groupId=group, consumerId="c1"))
