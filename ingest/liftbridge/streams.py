"""Stream admin RPCs: CreateStream, DeleteStream, PauseStream, SetStreamReadonly."""

from __future__ import annotations

from ingest.liftbridge.calls import RpcCall
from spark_log.errors import InvalidRequestError
from spark_log.liftbridge import api_pb2 as pb


async def create_stream(call: RpcCall, request: pb.CreateStreamRequest) -> pb.CreateStreamResponse:
    raise InvalidRequestError("create_stream is not served yet")


async def delete_stream(call: RpcCall, request: pb.DeleteStreamRequest) -> pb.DeleteStreamResponse:
    raise InvalidRequestError("delete_stream is not served yet")


async def pause_stream(call: RpcCall, request: pb.PauseStreamRequest) -> pb.PauseStreamResponse:
    raise InvalidRequestError("pause_stream is not served yet")


async def set_stream_readonly(
    call: RpcCall, request: pb.SetStreamReadonlyRequest
) -> pb.SetStreamReadonlyResponse:
    raise InvalidRequestError("set_stream_readonly is not served yet")
