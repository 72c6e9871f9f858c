"""SetCursor and FetchCursor. (not served yet)"""

from __future__ import annotations

from ingest.liftbridge.calls import RpcCall
from spark_log.errors import InvalidRequestError
from spark_log.liftbridge import api_pb2 as pb


async def set_cursor(call: RpcCall, request: pb.SetCursorRequest) -> pb.SetCursorResponse:
    raise InvalidRequestError("set_cursor is not served yet")


async def fetch_cursor(call: RpcCall, request: pb.FetchCursorRequest) -> pb.FetchCursorResponse:
    raise InvalidRequestError("fetch_cursor is not served yet")
