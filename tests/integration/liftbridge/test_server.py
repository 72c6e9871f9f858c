"""The node serves ``proto.API`` on its ``liftbridge_port``."""

from __future__ import annotations

import grpc
import pytest

from spark_log.liftbridge import api_pb2 as pb
from spark_log.liftbridge import api_pb2_grpc


async def test_every_node_answers_on_its_liftbridge_port(lb: api_pb2_grpc.APIStub) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await lb.FetchCursor(pb.FetchCursorRequest(stream="", cursorId=""))
    assert caught.value.code() != grpc.StatusCode.UNAVAILABLE
