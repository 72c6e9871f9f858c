"""Publish, PublishAsync and PublishToSubject. (not served yet)"""

from __future__ import annotations

from collections.abc import AsyncIterator

from ingest.liftbridge.calls import RpcCall
from ingest.liftbridge.proto import api_pb2 as pb
from spark_log.errors import InvalidRequestError


async def publish(call: RpcCall, request: pb.PublishRequest) -> pb.PublishResponse:
    raise InvalidRequestError("publish is not served yet")


async def publish_to_subject(
    call: RpcCall, request: pb.PublishToSubjectRequest
) -> pb.PublishToSubjectResponse:
    raise InvalidRequestError("publish_to_subject is not served yet")


async def publish_async(
    call: RpcCall, requests: AsyncIterator[pb.PublishRequest]
) -> AsyncIterator[pb.PublishResponse]:
    raise InvalidRequestError("publish_async is not served yet")
    yield pb.PublishResponse()  # type: ignore[unreachable]
