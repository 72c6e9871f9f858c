"""Authorization of the publishes that name no stream in their RPC rule: each PublishAsync
request on its own stream, and PublishToSubject on every stream recording its subject."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import cast

import pytest

from coordinator.znodes import PartitionState, StreamRecord
from ingest.liftbridge.calls import RpcCall
from ingest.liftbridge.publish_async import PublishAsyncSession
from ingest.liftbridge.subject_publish import publish_on_subject, recording_streams
from ingest.replica.manager import StreamView
from spark_log.auth import Action, stream_resource
from spark_log.errors import ForbiddenError, LiftlogError
from spark_log.liftbridge import api_pb2 as pb
from spark_log.stream_spec import StreamSpec


class PublishedError(LiftlogError):
    """Raised by the fake NATS connection: nothing may be published in these tests."""


def _call(denied: set[str], *specs: StreamSpec, auth: bool = True) -> RpcCall:
    def require(action: Action, resource: str) -> None:
        if action == Action.PUBLISH and resource in {stream_resource(s) for s in denied}:
            raise ForbiddenError(f"may not publish on {resource}")

    def publish(subject: str, payload: bytes) -> None:
        raise PublishedError(subject)

    streams = {
        spec.name: StreamView(
            StreamRecord(spec, paused=False, created_at_ms=1),
            {p: PartitionState(1, 1, (1,), (1,), 1) for p in range(spec.partitions)},
            {},
        )
        for spec in specs
    }
    node = SimpleNamespace(
        replicas=SimpleNamespace(streams=streams),
        nc=SimpleNamespace(is_connected=True, publish=publish),
        config=SimpleNamespace(broker_id=1),
        auth=SimpleNamespace(enabled=auth),
    )

    def authorize(request: pb.PublishRequest) -> None:
        require(Action.PUBLISH, stream_resource(request.stream))

    context = SimpleNamespace(invocation_metadata=lambda: ())
    return cast(
        RpcCall,
        SimpleNamespace(node=node, require=require, authorize=authorize, context=context),
    )


async def _requests(*requests: pb.PublishRequest) -> AsyncIterator[pb.PublishRequest]:
    for request in requests:
        yield request


async def test_a_refused_async_request_is_answered_and_the_stream_goes_on() -> None:
    call = _call({"secret"}, StreamSpec(name="secret", subject="secret.in"))
    session = PublishAsyncSession(call)
    answers = [
        (a.correlationId, pb.PublishAsyncError.Code.Name(a.asyncError.code))
        async for a in session.run(
            _requests(
                pb.PublishRequest(stream="secret", correlationId="denied"),
                pb.PublishRequest(stream="missing", correlationId="unknown"),
            )
        )
    ]
    assert answers == [("denied", "PERMISSION_DENIED"), ("unknown", "NOT_FOUND")]


def test_the_streams_recording_a_subject_are_found_through_their_partitions() -> None:
    call = _call(
        set(),
        StreamSpec(name="a", subject="orders.in"),
        StreamSpec(name="b", subject="orders.in", partitions=2),
        StreamSpec(name="c", subject="other"),
    )
    assert recording_streams(call.node, "orders.in") == ["a", "b"]
    assert recording_streams(call.node, "orders.in.1") == ["b"]
    assert recording_streams(call.node, "nothing") == []


async def test_publish_to_subject_needs_publish_on_every_stream_recording_it() -> None:
    call = _call(
        {"b"}, StreamSpec(name="a", subject="orders.in"), StreamSpec(name="b", subject="orders.in")
    )
    request = pb.PublishToSubjectRequest(subject="orders.in", value=b"x")
    with pytest.raises(ForbiddenError, match=re.escape(stream_resource("b"))):
        await publish_on_subject(call, request, None)
    allowed = _call(set(), StreamSpec(name="a", subject="orders.in"), auth=False)
    with pytest.raises(PublishedError):  # let through: without auth it reaches NATS
        await publish_on_subject(allowed, request, None)
