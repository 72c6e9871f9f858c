"""A node shared by a test module, and stubs of its Liftbridge gRPC API."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from liftlog.embedded.node import NodeProcess
from spark_log.liftbridge import api_pb2_grpc
from tests.support.liftbridge_client import liftbridge_stub


@pytest.fixture
async def lb(node: NodeProcess) -> AsyncIterator[api_pb2_grpc.APIStub]:
    """A stub of the module node's Liftbridge API (the stack's credentials, if any)."""
    async with liftbridge_stub(node.config.advertised_liftbridge_address) as stub:
        yield stub
