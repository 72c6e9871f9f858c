"""SIGTERM to every node of a cluster at once (``liftlog standalone`` stopping, a teardown).

Each node's controlled shutdown must neither hand leadership to another node that is stopping
too (which would only pass it on again, or take it down with it) nor wait for a successor
that will never come: every node exits promptly and cleanly.
"""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from liftlog.embedded.process import DEFAULT_STOP_TIMEOUT_S
from spark_log.client import Client
from tests.fault.test_failover import Load
from tests.integration.conftest import create_stream
from tests.support.waiting import wait_for

# about 90 s: run by make fault, not make test
pytestmark = pytest.mark.slow

STREAMS = 3
PROMPT_EXIT_S = 10.0  # well within the 15 s after which a stop turns into SIGKILL


async def test_all_nodes_stopped_at_once_exit_promptly(make_node, stream_name):
    nodes = [make_node(i) for i in (1, 2, 3)]
    names = [f"{stream_name}-{i}" for i in range(STREAMS)]
    with httpx.Client(base_url=nodes[0].api_url, timeout=30) as api:
        for name in names:
            create_stream(api, name, replication_factor=3)
    servers = ",".join(n.api_url for n in nodes)
    # publishes still in flight at the stop give up quickly: only the nodes' exit is measured
    async with Client(servers, ack_timeout_s=2, delivery_timeout_s=5) as client:
        loads = [Load(client, name) for name in names]
        for load in loads:
            await load.wait_acked(100, 60)
        started = time.monotonic()
        for node in nodes:  # acks=all publishers still running: leaderships are busy
            node.process.terminate()
        exited = await asyncio.to_thread(
            wait_for,
            lambda: all(not n.is_running() for n in nodes),
            PROMPT_EXIT_S,
            message="every node exited after SIGTERM",
        )
        took_s = time.monotonic() - started
        for load in loads:
            await load.finish()
    assert exited and PROMPT_EXIT_S < DEFAULT_STOP_TIMEOUT_S
    for node in nodes:
        assert node.process.returncode == 0, node.process.log_tail()
        assert f"node {node.broker_id} stopped" in node.log_path.read_text()
    print(f"all three nodes exited {took_s:.2f}s after SIGTERM")
