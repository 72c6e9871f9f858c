"""SetCursor and FetchCursor on three real nodes: any node answers for any cursor (the
``__cursors`` partitions are led by several nodes, so most calls are forwarded), a cursor
never set reads -1, and the refusals Liftbridge's clients expect."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import grpc
import pytest

from liftlog.embedded.node import NodeProcess
from spark_log.cursor_record import cursors_partition
from spark_log.liftbridge import api_pb2 as pb
from spark_log.liftbridge.api_pb2_grpc import APIStub
from spark_log.stream_spec import CURSORS_STREAM
from tests.integration.conftest import create_stream, node_client
from tests.support.liftbridge_client import liftbridge_stub

CURSORS = 4
"""``cursors.partitions`` of the nodes (the default)."""


@pytest.fixture(scope="module")
def cluster(make_module_node: Any) -> list[NodeProcess]:
    return [make_module_node(i) for i in (1, 2, 3)]


@pytest.fixture
async def stubs(cluster: list[NodeProcess]) -> AsyncIterator[list[APIStub]]:
    """A Liftbridge stub of each node, in broker id order."""
    async with AsyncExitStack() as stack:
        yield [
            await stack.enter_async_context(liftbridge_stub(n.config.advertised_liftbridge_address))
            for n in cluster
        ]


async def _code(call: Any) -> grpc.StatusCode:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return caught.value.code()


async def _fetch(stub: APIStub, stream: str, partition: int, cursor_id: str) -> int:
    request = pb.FetchCursorRequest(stream=stream, partition=partition, cursorId=cursor_id)
    return int((await stub.FetchCursor(request)).offset)


async def _set(stub: APIStub, stream: str, partition: int, cursor_id: str, offset: int) -> None:
    request = pb.SetCursorRequest(
        stream=stream, partition=partition, cursorId=cursor_id, offset=offset
    )
    await stub.SetCursor(request)


async def test_every_node_reads_what_any_node_set(
    cluster: list[NodeProcess], stubs: list[APIStub], stream_name: str
) -> None:
    ids = [f"reader-{i}" for i in range(16)]
    assert len({cursors_partition(i, CURSORS) for i in ids}) == CURSORS
    with node_client(cluster[0].api_url) as api:
        create_stream(api, stream_name, partitions=2)
    for i, cursor_id in enumerate(ids):
        await _set(stubs[i % 3], stream_name, i % 2, cursor_id, 100 + i)
    for stub in stubs:
        got = [await _fetch(stub, stream_name, i % 2, c) for i, c in enumerate(ids)]
        assert got == [100 + i for i in range(len(ids))]
    with node_client(cluster[1].api_url) as api:
        described = api.get(f"/v1/streams/{CURSORS_STREAM}").json()
    leaders = {p["leader"] for p in described["partitions"]}
    assert len(described["partitions"]) == CURSORS
    assert len(leaders) > 1, f"every __cursors partition led by one node: {leaders}"
    assert leaders <= {1, 2, 3}


async def test_a_cursor_never_set_reads_minus_one(
    cluster: list[NodeProcess], stubs: list[APIStub], stream_name: str
) -> None:
    """-1 also when it was set to -1 (nothing processed), and 0 stays 0 (a client storing
    the next offset to read sets 0 before it read anything)."""
    with node_client(cluster[0].api_url) as api:
        create_stream(api, stream_name)
    lb = stubs[2]
    assert await _fetch(lb, stream_name, 0, "never") == -1
    await _set(lb, stream_name, 0, "c", 0)
    assert await _fetch(stubs[0], stream_name, 0, "c") == 0
    await _set(lb, stream_name, 0, "c", -1)
    assert await _fetch(stubs[1], stream_name, 0, "c") == -1
    await _set(lb, stream_name, 0, "c", 7)
    assert await _fetch(stubs[1], stream_name, 0, "c") == 7
    with node_client(cluster[0].api_url) as api:
        rest = api.get(f"/v1/streams/{stream_name}/partitions/0/cursors/c").json()
    assert rest["offset"] == 7


async def test_bad_cursor_calls_are_refused(
    cluster: list[NodeProcess], stubs: list[APIStub], stream_name: str
) -> None:
    with node_client(cluster[0].api_url) as api:
        create_stream(api, stream_name, partitions=2)
    lb = stubs[0]
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    not_found = grpc.StatusCode.NOT_FOUND
    assert await _code(lb.SetCursor(pb.SetCursorRequest(cursorId="c", offset=1))) == invalid
    assert await _code(lb.SetCursor(pb.SetCursorRequest(stream=stream_name, offset=1))) == invalid
    assert await _code(lb.FetchCursor(pb.FetchCursorRequest(cursorId="c"))) == invalid
    assert await _code(lb.FetchCursor(pb.FetchCursorRequest(stream=stream_name))) == invalid
    assert await _code(_set(lb, stream_name, 0, "c", -2)) == invalid
    assert await _code(_set(lb, stream_name, 0, "a/b", 1)) == invalid
    assert await _code(_set(lb, "no-such-stream", 0, "c", 1)) == not_found
    assert await _code(_fetch(lb, "no-such-stream", 0, "c")) == not_found
    assert await _code(_set(lb, stream_name, 2, "c", 1)) == not_found
    assert await _code(_fetch(lb, stream_name, -1, "c")) == not_found
    assert await _fetch(lb, stream_name, 0, "c") == -1  # nothing refused was stored


async def test_a_group_member_checkpoints_its_partitions_in_the_group_s_cursor(
    cluster: list[NodeProcess], stubs: list[APIStub], stream_name: str
) -> None:
    """``__group:<group>`` holds the group's commits: while the group has members it takes
    the checkpoints of the partitions they were assigned (go-liftbridge's consumers write
    their progress there with SetCursor) and refuses the others."""
    other = f"{stream_name}-other"
    with node_client(cluster[0].api_url) as api:
        create_stream(api, stream_name)
        create_stream(api, other)
    cursor_id = "__group:keepers"
    join = pb.JoinConsumerGroupRequest(groupId="keepers", consumerId="k1", streams=[stream_name])
    await stubs[0].JoinConsumerGroup(join)
    await _set(stubs[1], stream_name, 0, cursor_id, 5)
    assert await _fetch(stubs[2], stream_name, 0, cursor_id) == 5
    code = await _code(_set(stubs[1], other, 0, cursor_id, 7))
    assert code == grpc.StatusCode.FAILED_PRECONDITION
    assert await _fetch(stubs[2], other, 0, cursor_id) == -1
    leave = pb.LeaveConsumerGroupRequest(groupId="keepers", consumerId="k1")
    await stubs[2].LeaveConsumerGroup(leave)
    await _set(stubs[1], other, 0, cursor_id, 7)
    assert await _fetch(stubs[0], other, 0, cursor_id) == 7
