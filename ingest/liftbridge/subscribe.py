"""Subscribe. (not served yet)"""

from __future__ import annotations

from collections.abc import AsyncIterator

from ingest.liftbridge.calls import RpcCall
from ingest.liftbridge.proto import api_pb2 as pb
from spark_log.errors import InvalidRequestError


async def subscribe(call: RpcCall, request: pb.SubscribeRequest) -> AsyncIterator[pb.Message]:
    raise InvalidRequestError("subscribe is not served yet")
    yield pb.Message()  # type: ignore[unreachable]
