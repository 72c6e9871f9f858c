"""What a node makes of its forwarded publishes' answers: a leader's status or ``asyncError``
rebuilt as the typed error it was, and a forwarded PublishAsync stream that routes each
answer to its request and fails what it still owes when it breaks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, cast

import grpc
import pytest

from coordinator.znodes import StreamRecord
from ingest.admin.node_view import NodeView
from ingest.liftbridge.acks import async_error
from ingest.liftbridge.peer_errors import error_from_async, error_from_status
from ingest.liftbridge.peer_streams import ForwardedStream
from ingest.liftbridge.publication import Publication
from ingest.liftbridge.publish_checks import PublishTarget
from ingest.liftbridge.status import RelayedStatusError, grpc_code, status_details
from ingest.produce.envelope_acks import EnvelopeAck
from spark_log.auth_config import AuthConfig
from spark_log.errors import ExpectedOffsetMismatchError, ForbiddenError, LiftlogError
from spark_log.liftbridge import api_pb2 as pb
from spark_log.stream_spec import StreamSpec
from spark_log.tls_config import ApiTlsConfig


@pytest.mark.parametrize(
    ("code", "details"),
    [
        (grpc.StatusCode.PERMISSION_DENIED, "forbidden: principal 'p' may not publish"),
        (grpc.StatusCode.FAILED_PRECONDITION, "expected_offset_mismatch: incorrect offset"),
        (grpc.StatusCode.INTERNAL, "internal_error: boom"),
        (grpc.StatusCode.UNAVAILABLE, "failed to connect to all addresses"),
        (grpc.StatusCode.INVALID_ARGUMENT, "forbidden: a code that does not fit the status"),
    ],
)
def test_a_leaders_status_is_answered_with_the_same_code_and_details(
    code: grpc.StatusCode, details: str
) -> None:
    error = error_from_status(code, details)
    assert (grpc_code(error), status_details(error)) == (code, details)


def test_a_leaders_status_rebuilds_its_typed_error() -> None:
    forbidden = error_from_status(grpc.StatusCode.PERMISSION_DENIED, "forbidden: no")
    transport = error_from_status(grpc.StatusCode.UNAVAILABLE, "connection refused")
    assert isinstance(forbidden, ForbiddenError) and forbidden.message == "no"
    assert isinstance(transport, RelayedStatusError)


def test_a_leaders_async_error_keeps_its_code() -> None:
    sent = async_error(ExpectedOffsetMismatchError("incorrect expected offset"))
    assert async_error(error_from_async(sent)) == sent
    odd = pb.PublishAsyncError(code=pb.PublishAsyncError.NOT_FOUND, message="no code here")
    assert async_error(error_from_async(odd)).code == pb.PublishAsyncError.INTERNAL


class _Node:
    """What a forwarded stream reads of its node: the credentials it forwards with."""

    def __init__(self) -> None:
        self.config = type("Config", (), {"auth": AuthConfig(), "api_tls": ApiTlsConfig()})()


class _Leader:
    """Stands in for the leader's PublishAsync: reads the requests sent, and answers each
    with ``answer`` until ``break_after`` requests, when the call fails UNAVAILABLE."""

    def __init__(self, break_after: int) -> None:
        self.received: list[pb.PublishRequest] = []
        self._break_after = break_after

    def PublishAsync(  # noqa: N802 (the stub's method name)
        self, requests: AsyncIterator[pb.PublishRequest], metadata: Any
    ) -> AsyncIterator[pb.PublishResponse]:
        return self._serve(requests)

    async def _serve(
        self, requests: AsyncIterator[pb.PublishRequest]
    ) -> AsyncIterator[pb.PublishResponse]:
        async for request in requests:
            self.received.append(request)
            if len(self.received) > self._break_after:
                raise grpc.aio.AioRpcError(grpc.StatusCode.UNAVAILABLE, details="reset by peer")
            if request.value == b"refuse":
                refusal = async_error(ForbiddenError("principal 'p' may not publish"))
                yield pb.PublishResponse(correlationId=request.correlationId, asyncError=refusal)
            else:
                ack = pb.Ack(stream="s", offset=len(self.received), correlationId="leader's")
                yield pb.PublishResponse(correlationId=request.correlationId, ack=ack)


def _pub(value: bytes, correlation_id: str) -> Publication:
    target = PublishTarget(
        record=StreamRecord(StreamSpec(name="s", subject="s.in"), paused=False, created_at_ms=1),
        partition=0,
        leader=2,
        ack_policy="leader",
        expected_offset=None,
        headers=None,
    )
    fields = EnvelopeAck("s", "s.in", "s.in", "", correlation_id, pb.LEADER, 1)
    return Publication(target, b"", value, fields)


async def test_each_answer_reaches_its_request_and_a_break_fails_what_is_owed() -> None:
    leader = _Leader(break_after=2)
    stream = ForwardedStream(cast(NodeView, _Node()), 2, cast(Any, leader))
    first = stream.send(_pub(b"ok", ""), "0", wait=True)
    refused = stream.send(_pub(b"refuse", "same"), "1", wait=True)
    owed = stream.send(_pub(b"lost", "same"), "2", wait=True)
    ack = await asyncio.wait_for(first, 5)
    assert ack is not None and (ack.offset, ack.correlationId) == (1, "")
    with pytest.raises(ForbiddenError):
        await asyncio.wait_for(refused, 5)
    with pytest.raises(LiftlogError) as broke:
        await asyncio.wait_for(owed, 5)
    assert async_error(broke.value).code == pb.PublishAsyncError.UNKNOWN
    assert "reset by peer" in broke.value.message
    assert stream.ended
    assert [r.correlationId for r in leader.received] == ["0", "1", "2"]
