"""Publish, PublishAsync and PublishToSubject. (not served yet)"""

from __future__ import annotations

from collections.abc import AsyncIterator

from ingest.liftbridge.calls import RpcCall
from spark_log.errors import InvalidRequestError
from spark_log.liftbridge import api_pb2 as pb


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
