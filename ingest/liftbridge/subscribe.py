"""Subscribe. (not served yet)"""

from __future__ import annotations

from collections.abc import AsyncIterator

from ingest.liftbridge.calls import RpcCall
from spark_log.errors import InvalidRequestError
from spark_log.liftbridge import api_pb2 as pb


async def subscribe(call: RpcCall, request: pb.SubscribeRequest) -> AsyncIterator[pb.Message]:
    raise InvalidRequestError("subscribe is not served yet")
    yield pb.Message()  # type: ignore[unreachable]
