"""python-liftbridge, as published, against one node: create, publish, every start position it
offers, metadata and delete.

The client runs unchanged in its own venv (python-liftbridge 0.0.7 on grpcio 1.84.0 and
protobuf 6.33.6 in its pure-Python implementation, pinned in tests/support/client_venvs.py):
its stubs come from an older api.proto, so this is also the proof that an older generation of
the contract still reads ours. Its Publish sets no deadline, so (as on Liftbridge) it returns
before the ack and what it published is checked by reading it back.
"""

from __future__ import annotations

import json
import math
import time
from typing import Any

import pytest

from liftlog.embedded.node import NodeProcess
from tests.support.client_scripts import run_client_script
from tests.support.client_venvs import PYTHON_LIFTBRIDGE
from tests.support.stacks import plain_stack_only
from tests.support.waiting import wait_for

pytestmark = plain_stack_only("python-liftbridge sends no token")

SCRIPT = "python_liftbridge_client.py"
TIMEOUT_S = 20.0
NS_PER_S = 1_000_000_000


def answer(node: NodeProcess, operation: str, **args: Any) -> Any:
    return run_client_script(
        PYTHON_LIFTBRIDGE,
        SCRIPT,
        node.config.advertised_liftbridge_address,
        operation,
        json.dumps({**args, "timeout": TIMEOUT_S}),
        timeout_s=TIMEOUT_S + 15,
    )


def call(node: NodeProcess, operation: str, **args: Any) -> Any:
    """The result of one operation of the client; its failure names the status."""
    got = answer(node, operation, **args)
    assert "error" not in got, f"python-liftbridge {operation} {args}: {got['error']}"
    return got["result"]


def refused(node: NodeProcess, operation: str, **args: Any) -> dict[str, Any]:
    got = answer(node, operation, **args)
    assert "error" in got, f"python-liftbridge {operation} {args} succeeded: {got['result']}"
    error: dict[str, Any] = got["error"]
    return error


def subscribed(node: NodeProcess, **args: Any) -> list[dict[str, Any]]:
    """The records of a subscription, after the empty handshake the server sends first."""
    got = call(node, "subscribe", **args)
    assert got["handshake"] is True, got
    messages: list[dict[str, Any]] = got["messages"]
    return messages


@pytest.fixture
def stream(node: NodeProcess, stream_name: str) -> str:
    assert call(node, "create", name=stream_name, subject=f"{stream_name}.in") == "created"
    return stream_name


def values(messages: list[dict[str, Any]]) -> list[str]:
    return [m["value"] for m in messages]


def test_create_and_a_second_create_is_refused(node: NodeProcess, stream: str) -> None:
    error = refused(node, "create", name=stream, subject=f"{stream}.in")
    assert error["type"] == "ErrStreamExists", error


def test_publish_then_subscribe_from_earliest(node: NodeProcess, stream: str) -> None:
    assert call(node, "publish", stream=stream, values=["a", "b"], key="k") == 2
    assert call(node, "publish", stream=stream, values=["c"], ack_policy="ALL") == 1
    got = subscribed(node, stream=stream, start_position="EARLIEST", count=3)
    assert values(got) == ["a", "b", "c"]
    assert [m["offset"] for m in got] == [0, 1, 2]
    assert [m["key"] for m in got] == ["k", "k", None]
    assert {m["subject"] for m in got} == {f"{stream}.in"}


def test_subscribe_from_an_offset_and_from_the_latest(node: NodeProcess, stream: str) -> None:
    call(node, "publish", stream=stream, values=[f"v{i}" for i in range(6)])
    from_offset = subscribed(node, stream=stream, start_position="OFFSET", start_offset=3, count=3)
    assert values(from_offset) == ["v3", "v4", "v5"]
    # offset 0 is the default this client leaves unset: the first record all the same
    assert values(subscribed(node, stream=stream, start_position="OFFSET", start_offset=0, count=1))
    assert values(subscribed(node, stream=stream, start_position="LATEST", count=1)) == ["v5"]


def test_subscribe_new_only(node: NodeProcess, stream: str) -> None:
    call(node, "publish", stream=stream, values=["old-0", "old-1"])
    wait_for(
        lambda: (
            values(subscribed(node, stream=stream, start_position="LATEST", count=1)) == ["old-1"]
        ),
        message="the old records stored",
    )
    got = subscribed(node, stream=stream, count=2, publish=["new-0", "new-1"])
    assert values(got) == ["new-0", "new-1"]
    assert [m["offset"] for m in got] == [2, 3]


def test_subscribe_from_a_time(node: NodeProcess, stream: str) -> None:
    call(node, "publish", stream=stream, values=["before"])
    before = subscribed(node, stream=stream, start_position="EARLIEST", count=1)[0]
    # the client asks in whole seconds: the next records come after the next one starts
    start_s = math.floor(before["timestamp"] / NS_PER_S) + 1
    wait_for(lambda: time.time() >= start_s, timeout_s=3, message="the next second")
    call(node, "publish", stream=stream, values=["after-0", "after-1"])
    got = subscribed(node, stream=stream, start_position="TIMESTAMP", start_time_s=start_s, count=2)
    assert values(got) == ["after-0", "after-1"]


def test_publish_to_the_stream_s_subject(node: NodeProcess, stream: str) -> None:
    assert call(node, "publish_to_subject", subject=f"{stream}.in", values=["s-0", "s-1"]) == 2
    got = subscribed(node, stream=stream, start_position="EARLIEST", count=2)
    assert values(got) == ["s-0", "s-1"]


def test_metadata_with_the_older_contract(node: NodeProcess, stream: str) -> None:
    got = call(node, "metadata")
    host, port = node.config.advertised_liftbridge_address.rsplit(":", 1)
    assert got["brokers"] == [{"id": str(node.broker_id), "host": host, "port": int(port)}]
    assert got["streams"][stream] == {"subject": f"{stream}.in", "partitions": [0]}


def test_delete_stream(node: NodeProcess, stream: str) -> None:
    assert call(node, "delete", name=stream) == "deleted"
    wait_for(
        lambda: stream not in call(node, "metadata")["streams"],
        message=f"{stream} gone from the metadata",
    )
    error = refused(node, "subscribe", stream=stream, start_position="EARLIEST", count=1)
    assert error["type"] == "ErrNoSuchStream", error
