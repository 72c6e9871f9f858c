"""Preferred-leader election on a real 3-node cluster under acks=all load.

Kill the preferred leader, wait for a new leader, restart the old one, wait for it to rejoin
the ISR; then leadership goes back to it: on demand (the real ``liftlog stream
elect-preferred`` command against a node that may not be the controller) or by the automatic
leader rebalance (a short check interval). Every acknowledged record is present afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from spark_log.client import Client
from tests.fault.test_failover import ACKED_PER_ROUND, Load, _check_no_acked_loss, _describe
from tests.integration.conftest import create_stream
from tests.support.waiting import wait_for

# long: run by make fault (and make test-slow), not make test
pytestmark = pytest.mark.slow

LIFTLOG = str(Path(sys.executable).parent / "liftlog")
FAST_REBALANCE_CHECK_S = 1.0
CLI_TIMEOUT_S = 60.0


def _elect_preferred_cli(server: str, stream: str) -> dict:
    done = subprocess.run(
        [LIFTLOG, "stream", "elect-preferred", stream, "--json", "--server", server],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=True,
    )
    return json.loads(done.stdout)


async def _fail_over_and_return(nodes, stream: str, load: Load):
    """Kill the preferred leader, wait for the survivors to elect, bring it back in sync."""
    before = _describe(nodes[0], stream)
    preferred = before["replicas"][0]
    assert before["leader"] == preferred
    victim = next(n for n in nodes if n.broker_id == preferred)
    survivor = next(n for n in nodes if n is not victim)
    await load.wait_acked(len(load.acked) + ACKED_PER_ROUND, 60)
    victim.kill()
    wait_for(
        lambda: _describe(survivor, stream)["leader"] not in (preferred, -1),
        30,
        message="a new leader from the ISR",
    )
    await load.wait_acked(len(load.acked) + ACKED_PER_ROUND, 60)
    victim.start()
    wait_for(
        lambda: sorted(_describe(survivor, stream)["isr"]) == [1, 2, 3],
        60,
        message="the preferred replica rejoins the ISR",
    )
    return preferred, survivor, _describe(survivor, stream)


@pytest.mark.parametrize("trigger", ["on_demand", "automatic"])
async def test_leadership_returns_to_the_preferred_replica(make_node, stream_name, trigger):
    automatic = trigger == "automatic"
    nodes = [
        make_node(
            i,
            replica_lag_time_max_s=3.0,
            auto_leader_rebalance_enable=automatic,
            leader_imbalance_check_interval_s=FAST_REBALANCE_CHECK_S,
        )
        for i in (1, 2, 3)
    ]
    with httpx.Client(base_url=nodes[0].api_url, timeout=30) as api:
        create_stream(api, stream_name, replication_factor=3)
    servers = ",".join(n.api_url for n in nodes)
    async with Client(servers, ack_timeout_s=2) as client:
        load = Load(client, stream_name)
        preferred, survivor, returned = await _fail_over_and_return(nodes, stream_name, load)
        if not automatic:
            assert returned["leader"] != preferred  # nothing moves it back by itself
            answer = _elect_preferred_cli(survivor.api_url, stream_name)
            (outcome,) = answer["partitions"]
            assert outcome["preferred"] == preferred
            assert outcome["leader"] == preferred and outcome["elected"] is True
            assert outcome["leader_epoch"] > returned["leader_epoch"]
        after = wait_for(
            lambda: (d := _describe(survivor, stream_name))["leader"] == preferred and d,
            30,
            message="leadership back on the preferred replica",
        )
        assert sorted(after["isr"]) == [1, 2, 3]
        await load.wait_acked(len(load.acked) + ACKED_PER_ROUND, 60)
        await load.finish()
    again = _elect_preferred_cli(survivor.api_url, stream_name)["partitions"][0]
    assert again["elected"] is False and again["reason"] is None  # already the leader
    await _check_no_acked_loss(nodes, stream_name, load.acked)
