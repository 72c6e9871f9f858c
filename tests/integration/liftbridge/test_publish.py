"""Publish and PublishToSubject on one node: what a Liftbridge client sends, stored as Liftlog
records and acked as Liftbridge acks."""

from __future__ import annotations

import time
from typing import Any

import grpc
import httpx
import nats
import pytest

from spark_log.liftbridge import api_pb2 as pb
from spark_log.liftbridge import api_pb2_grpc
from spark_log.liftbridge.envelope import decode_ack
from tests.integration.conftest import create_stream, fetch
from tests.support.stacks import secure_stack
from tests.support.waiting import wait_for

DEADLINE_S = 10.0


async def _refused(coro: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await coro
    return caught.value


def _records(api: httpx.Client, name: str, count: int) -> list[dict[str, Any]]:
    """The stream's first ``count`` records, once that many are committed."""

    def committed() -> list[dict[str, Any]] | None:
        records: list[dict[str, Any]] = fetch(api, name)["records"]
        return records if len(records) >= count else None

    return wait_for(committed, message=f"{count} records in {name}")


@pytest.mark.parametrize("policy", [pb.LEADER, pb.ALL])
async def test_a_publish_with_a_deadline_answers_the_full_ack_of_the_stored_record(
    lb: api_pb2_grpc.APIStub, api: httpx.Client, stream_name: str, policy: int
) -> None:
    create_stream(api, stream_name)
    before_ns = time.time_ns()
    request = pb.PublishRequest(
        stream=stream_name,
        key=b"k1",
        value=b"v1",
        headers={"h": b"one", "e": "é".encode()},
        correlationId="c-1",
        ackPolicy=policy,  # type: ignore[arg-type]
    )
    response = await lb.Publish(request, timeout=DEADLINE_S)
    ack = response.ack
    assert (ack.stream, ack.offset, ack.correlationId, ack.ackPolicy) == (
        stream_name,
        0,
        "c-1",
        policy,
    )
    assert ack.partitionSubject == ack.msgSubject == f"{stream_name}.in"
    assert before_ns <= ack.receptionTimestamp <= ack.commitTimestamp <= time.time_ns()
    assert ack.ackError == pb.Ack.OK
    [record] = _records(api, stream_name, 1)
    assert (record["key"], record["value"]) == ("k1", "v1")
    assert record["headers"] == {"h": "one", "e": "é"}


async def test_without_a_deadline_or_with_acks_none_a_publish_returns_at_once_and_is_stored(
    lb: api_pb2_grpc.APIStub, api: httpx.Client, stream_name: str
) -> None:
    create_stream(api, stream_name)
    no_deadline = await lb.Publish(pb.PublishRequest(stream=stream_name, value=b"a"))
    acks_none = await lb.Publish(
        pb.PublishRequest(stream=stream_name, value=b"b", ackPolicy=pb.NONE), timeout=DEADLINE_S
    )
    assert not no_deadline.HasField("ack") and not acks_none.HasField("ack")
    values = sorted(r["value"] for r in _records(api, stream_name, 2))
    assert values == ["a", "b"]


async def test_a_publish_to_a_later_partition_lands_there(
    lb: api_pb2_grpc.APIStub, api: httpx.Client, stream_name: str
) -> None:
    create_stream(api, stream_name, partitions=2)
    request = pb.PublishRequest(stream=stream_name, partition=1, value=b"p1")
    ack = (await lb.Publish(request, timeout=DEADLINE_S)).ack
    assert ack.partitionSubject == f"{stream_name}.in.1"
    assert [r["value"] for r in fetch(api, stream_name, 1)["records"]] == ["p1"]


async def test_expected_offset_is_checked_on_an_optimistic_concurrency_stream(
    lb: api_pb2_grpc.APIStub, api: httpx.Client, stream_name: str
) -> None:
    create_stream(api, stream_name, optimistic_concurrency_control=True)

    def at(offset: int, policy: int = pb.LEADER) -> pb.PublishRequest:
        return pb.PublishRequest(
            stream=stream_name,
            value=b"x",
            expectedOffset=offset,
            ackPolicy=policy,  # type: ignore[arg-type]
        )

    assert (await lb.Publish(at(0), timeout=DEADLINE_S)).ack.offset == 0
    wrong = await _refused(lb.Publish(at(0), timeout=DEADLINE_S))
    assert wrong.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "expected_offset_mismatch" in (wrong.details() or "")
    assert (await lb.Publish(at(1), timeout=DEADLINE_S)).ack.offset == 1
    assert (await lb.Publish(at(-1), timeout=DEADLINE_S)).ack.offset == 2
    fire_and_forget = await _refused(lb.Publish(at(3, pb.NONE), timeout=DEADLINE_S))
    assert fire_and_forget.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert len(fetch(api, stream_name)["records"]) == 3


async def test_expected_offset_is_ignored_without_optimistic_concurrency_control(
    lb: api_pb2_grpc.APIStub, api: httpx.Client, stream_name: str
) -> None:
    create_stream(api, stream_name)
    request = pb.PublishRequest(stream=stream_name, value=b"x", expectedOffset=42)
    assert (await lb.Publish(request, timeout=DEADLINE_S)).ack.offset == 0


async def test_publishes_liftbridge_refuses_get_its_status_codes(
    lb: api_pb2_grpc.APIStub, api: httpx.Client, stream_name: str
) -> None:
    create_stream(api, stream_name, max_record_bytes=8)
    cases = [
        (pb.PublishRequest(value=b"x"), grpc.StatusCode.INVALID_ARGUMENT, "no stream"),
        (pb.PublishRequest(stream=f"{stream_name}-none"), grpc.StatusCode.NOT_FOUND, "exist"),
        (pb.PublishRequest(stream=stream_name, partition=3), grpc.StatusCode.NOT_FOUND, "3"),
        (
            pb.PublishRequest(stream=stream_name, headers={"bin": b"\xff"}),
            grpc.StatusCode.INVALID_ARGUMENT,
            "'bin'",
        ),
        (
            pb.PublishRequest(stream=stream_name, value=b"123456789"),
            grpc.StatusCode.INVALID_ARGUMENT,
            "record_too_large",
        ),
        (
            pb.PublishRequest(stream=stream_name, ackInbox="_LIFTLOG.x.inbox.1"),
            grpc.StatusCode.INVALID_ARGUMENT,
            "ackInbox",
        ),
    ]
    for request, code, text in cases:
        refused = await _refused(lb.Publish(request, timeout=DEADLINE_S))
        assert (refused.code(), text in (refused.details() or "")) == (code, True), request
    assert fetch(api, stream_name)["records"] == []


async def test_a_read_only_stream_refuses_a_publish_with_failed_precondition(
    lb: api_pb2_grpc.APIStub, api: httpx.Client, stream_name: str
) -> None:
    create_stream(api, stream_name)
    api.post(f"/v1/streams/{stream_name}/readonly").raise_for_status()
    request = pb.PublishRequest(stream=stream_name, value=b"x")
    refused = await _refused(lb.Publish(request, timeout=DEADLINE_S))
    assert refused.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert fetch(api, stream_name)["records"] == []


async def test_a_publish_resumes_a_paused_stream_as_on_liftbridge(
    lb: api_pb2_grpc.APIStub, api: httpx.Client, stream_name: str
) -> None:
    create_stream(api, stream_name)
    api.post(f"/v1/streams/{stream_name}/pause").raise_for_status()
    request = pb.PublishRequest(stream=stream_name, value=b"wakes")
    assert (await lb.Publish(request, timeout=DEADLINE_S)).ack.offset == 0
    assert api.get(f"/v1/streams/{stream_name}").json()["paused"] is False
    assert [r["value"] for r in fetch(api, stream_name)["records"]] == ["wakes"]


async def test_the_ack_also_goes_to_the_ack_inbox_the_client_named(
    lb: api_pb2_grpc.APIStub, api: httpx.Client, nc: nats.NATS, stream_name: str
) -> None:
    create_stream(api, stream_name)
    inbox = nc.new_inbox()
    subscription = await nc.subscribe(inbox)
    await nc.flush()
    request = pb.PublishRequest(
        stream=stream_name, value=b"x", ackInbox=inbox, correlationId="mine"
    )
    answered = (await lb.Publish(request, timeout=DEADLINE_S)).ack
    told = decode_ack((await subscription.next_msg(timeout=DEADLINE_S)).data)
    assert (told.offset, told.correlationId, told.ackInbox) == (answered.offset, "mine", inbox)


async def test_publish_to_subject_is_stored_by_the_stream_recording_the_subject(
    lb: api_pb2_grpc.APIStub, api: httpx.Client, stream_name: str
) -> None:
    create_stream(api, stream_name)
    request = pb.PublishToSubjectRequest(
        subject=f"{stream_name}.in", key=b"k", value=b"v", headers={"h": b"1"}, correlationId="s1"
    )
    ack = (await lb.PublishToSubject(request, timeout=DEADLINE_S)).ack
    assert (ack.stream, ack.offset, ack.correlationId, ack.msgSubject) == (
        stream_name,
        0,
        "s1",
        f"{stream_name}.in",
    )
    await lb.PublishToSubject(
        pb.PublishToSubjectRequest(subject=f"{stream_name}.in", value=b"no deadline")
    )
    records = _records(api, stream_name, 2)
    assert [(r["key"], r["value"], r["headers"]) for r in records] == [
        ("k", "v", {"h": "1"}),
        (None, "no deadline", {}),
    ]


async def test_publish_to_subject_without_a_stream_waits_for_its_deadline(
    lb: api_pb2_grpc.APIStub, stream_name: str
) -> None:
    """Liftbridge publishes to a subject no stream records; nobody acks it. With
    authentication on the node refuses it instead: its NATS login is nobody's to borrow."""
    request = pb.PublishToSubjectRequest(subject=f"{stream_name}.nobody", value=b"x")
    if secure_stack():
        refused = await _refused(lb.PublishToSubject(request, timeout=0.5))
        assert refused.code() == grpc.StatusCode.PERMISSION_DENIED
        return
    assert not (await lb.PublishToSubject(request)).HasField("ack")
    refused = await _refused(lb.PublishToSubject(request, timeout=0.5))
    assert refused.code() == grpc.StatusCode.DEADLINE_EXCEEDED


async def test_publish_to_subject_refuses_inboxes_and_internal_subjects(
    lb: api_pb2_grpc.APIStub,
) -> None:
    for subject in ("_INBOX.someone.1", "_LIFTLOG.x.fetch", "$SYS.x", "a.*"):
        request = pb.PublishToSubjectRequest(subject=subject, value=b"x")
        refused = await _refused(lb.PublishToSubject(request, timeout=DEADLINE_S))
        assert refused.code() == grpc.StatusCode.INVALID_ARGUMENT, subject
