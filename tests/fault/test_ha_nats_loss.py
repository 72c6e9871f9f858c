"""Losing a NATS server of the HA topology under acks=all load.

The partition leader's node is attached to one server of a three-server NATS cluster and
lists the other two: kill -9 of that server moves the node (and its subscriptions, its
followers' fetches) to another server, acks resume, and every acknowledged record is on every
replica afterwards at the offset it was acknowledged with.
"""

from __future__ import annotations

import time

import httpx
import pytest

from liftlog.embedded.standalone import Standalone
from spark_log.client import Client
from tests.fault.test_failover import ACKED_PER_ROUND, Load, _check_no_acked_loss, _describe
from tests.integration.conftest import create_stream
from tests.support.ha_stack import ha_stack  # noqa: F401

pytestmark = [pytest.mark.fault, pytest.mark.slow]

ACK_RESUME_TIMEOUT_S = 60.0


def _leader_node_and_server(stack: Standalone, stream: str) -> tuple[int, int]:
    """(the leader's broker id, the index of the NATS server its node is attached to: node
    ``i`` lists server ``i`` first, see standalone_ha.py)."""
    assert stack.ha is not None
    leader = _describe(stack.nodes[0], stream)["leader"]
    return leader, (leader - 1) % len(stack.ha.nats.servers)


async def test_kill9_of_the_leaders_nats_server_loses_no_acked_record(
    ha_stack,  # noqa: F811 (the fixture imported above)
    stream_name,
):
    stack: Standalone = ha_stack
    assert stack.ha is not None
    with httpx.Client(base_url=stack.nodes[0].api_url, timeout=30) as api:
        create_stream(api, stream_name, replication_factor=3)
    leader, server_index = _leader_node_and_server(stack, stream_name)
    killed = stack.ha.nats.servers[server_index]
    survivor = stack.ha.nats.servers[(server_index + 1) % len(stack.ha.nats.servers)]
    async with Client(stack.servers, nats_url=survivor.url, ack_timeout_s=2) as client:
        load = Load(client, stream_name)
        await load.wait_acked(ACKED_PER_ROUND, ACK_RESUME_TIMEOUT_S)
        killed_at = time.monotonic()
        killed.kill()
        await load.wait_acked(len(load.acked) + ACKED_PER_ROUND, ACK_RESUME_TIMEOUT_S)
        first_ack = min(t for t in load.ack_times if t > killed_at)
        await load.finish()
    after = _describe(stack.nodes[0], stream_name)
    failed = [code for t, code in load.failures if t > killed_at]
    print(
        f"NATS server {server_index + 1} killed: first ack after {first_ack - killed_at:.2f}s, "
        f"{len(failed)} failed publishes {sorted(set(failed))}, isr {after['isr']}"
    )
    assert after["leader"] == leader, "losing a NATS server must not move leadership"
    await _check_no_acked_loss(stack.nodes, stream_name, load.acked)
