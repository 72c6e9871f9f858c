"""Losing ZooKeeper servers of the HA topology under acks=all load.

One server of three (the ensemble leader, whose loss forces an ensemble election) goes
unnoticed: no publish fails, the controller and the ISR stay, streams can still be created.
Two of three (no quorum) stop what needs ZooKeeper with a typed 503 while the leaders keep
serving with the ISR they have (Kafka's behaviour): a follower that dies meanwhile cannot be
shrunk out of the ISR, so acks=all waits instead of acknowledging on fewer replicas. When the
servers return, everything resumes; every acknowledged record is on every replica at the
offset it was acknowledged with.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from liftlog.embedded.node import NodeProcess
from liftlog.embedded.standalone import Standalone
from liftlog.embedded.zookeeper_ensemble import ZooKeeperEnsemble, ZooKeeperEnsembleServer
from spark_log.client import Client
from tests.fault.test_failover import ACKED_PER_ROUND, Load, _check_no_acked_loss, _describe
from tests.integration.conftest import create_stream
from tests.support.ha_stack import start_ha_stack
from tests.support.waiting import wait_for, wait_for_async

pytestmark = [pytest.mark.fault, pytest.mark.slow]

T = TypeVar("T")

# a follower out of sync for this long is shrunk out of the ISR (when ZooKeeper allows)
REPLICA_LAG_TIME_MAX_S = 3.0
ACK_TIMEOUT_S = 60.0
QUORUM_TIMEOUT_S = 60.0
# a request that needs ZooKeeper must answer (503) well within this while there is no quorum
TYPED_ERROR_WITHIN_S = 20.0


@pytest.fixture
def ha_zk_stack(temp_dir: Path) -> Iterator[Standalone]:
    """The HA stack with a short replica lag, so an ISR shrink is due during the outage."""
    stack = start_ha_stack(temp_dir / "ha", {"replica_lag_time_max_s": REPLICA_LAG_TIME_MAX_S})
    try:
        yield stack
    finally:
        stack.stop()


async def _off_loop(fn: Callable[..., T], *args: Any) -> T:
    """Blocking calls (HTTP, process control) run in a thread so the load keeps publishing."""
    return await asyncio.to_thread(fn, *args)


def _post_stream(url: str, name: str) -> tuple[int, dict[str, Any], float]:
    """(status, body, seconds taken) of a stream create."""
    started = time.monotonic()
    with httpx.Client(base_url=url, timeout=2 * TYPED_ERROR_WITHIN_S) as api:
        resp = api.post("/v1/streams", json={"name": name, "subject": f"{name}.in"})
    return resp.status_code, resp.json(), time.monotonic() - started


def _delete_stream(url: str, name: str) -> tuple[int, dict[str, Any], float]:
    started = time.monotonic()
    with httpx.Client(base_url=url, timeout=2 * TYPED_ERROR_WITHIN_S) as api:
        resp = api.delete(f"/v1/streams/{name}")
    body = resp.json() if resp.content else {}
    return resp.status_code, body, time.monotonic() - started


def _cluster(url: str) -> dict[str, Any]:
    with httpx.Client(base_url=url, timeout=10) as api:
        body: dict[str, Any] = api.get("/v1/cluster").json()
    return body


async def _wait_quorum(ensemble: ZooKeeperEnsemble) -> ZooKeeperEnsembleServer:
    """The ensemble's leader once one is elected."""
    leader: ZooKeeperEnsembleServer = await wait_for_async(
        ensemble.leader, QUORUM_TIMEOUT_S, interval_s=0.1, message="a ZooKeeper leader"
    )
    return leader


async def _lose_the_zookeeper_leader(stack: Standalone, stream: str, load: Load) -> None:
    """Kill -9 the ensemble leader: nothing a client sees changes."""
    assert stack.ha is not None
    url = stack.nodes[0].api_url
    before, cluster = (
        await _off_loop(_describe, stack.nodes[0], stream),
        await _off_loop(_cluster, url),
    )
    leader = stack.ha.zookeeper.leader()
    assert leader is not None
    killed_at = time.monotonic()
    leader.kill()
    await _wait_quorum(stack.ha.zookeeper)
    await load.wait_acked(len(load.acked) + 2 * ACKED_PER_ROUND, ACK_TIMEOUT_S)
    status, body, _took = await _off_loop(_post_stream, url, f"{stream}-one-zk-down")
    assert status == 201, body
    failed = [code for t, code in load.failures if t > killed_at]
    assert not failed, f"publishes failed after losing one ZooKeeper server: {set(failed)}"
    after = await _off_loop(_describe, stack.nodes[0], stream)
    assert (after["leader"], after["leader_epoch"]) == (before["leader"], before["leader_epoch"])
    assert sorted(after["isr"]) == sorted(before["isr"])
    assert (await _off_loop(_cluster, url))["controller"] == cluster["controller"]


async def _refused_without_quorum(url: str, stream: str) -> None:
    """Create and delete answer a typed 503 quickly, never hang or 500."""
    for status, body, took in (
        await _off_loop(_post_stream, url, f"{stream}-no-quorum"),
        await _off_loop(_delete_stream, url, f"{stream}-one-zk-down"),
    ):
        assert status == 503, body
        assert body["error"]["code"] == "unavailable", body
        assert took < TYPED_ERROR_WITHIN_S, f"took {took:.1f}s"


def _first_create_after(url: str, stream: str) -> float:
    """Seconds until a stream create succeeds (the first ZooKeeper write that works)."""
    started = time.monotonic()
    wait_for(
        lambda: _post_stream(url, f"{stream}-after")[0] in (200, 201),
        QUORUM_TIMEOUT_S,
        interval_s=0.05,
        message="a stream create after the quorum returned",
    )
    return time.monotonic() - started


def _postponed(node: NodeProcess, stream: str) -> int:
    """How often the leader logged that it could not write an ISR change of ``stream``."""
    text = node.log_path.read_text(errors="replace")
    return sum(
        1
        for line in text.splitlines()
        if f"{stream}/0: ISR change to" in line and "postponed, ZooKeeper unavailable" in line
    )


async def _dead_follower_stops_acks(
    leader: NodeProcess, follower: NodeProcess, stream: str, load: Load
) -> None:
    """Without a quorum the leader cannot shrink a dead follower out of the ISR: its shrink is
    postponed (retried every second) and no acks=all publish is acknowledged meanwhile."""
    await _off_loop(follower.kill)

    def postponed_since(count: int) -> Callable[[], bool]:
        return lambda: _postponed(leader, stream) > count

    await _off_loop(wait_for, postponed_since(0), ACK_TIMEOUT_S, 0.1, "a postponed shrink")
    acked = len(load.acked)
    seen = _postponed(leader, stream)
    await _off_loop(wait_for, postponed_since(seen), ACK_TIMEOUT_S, 0.1, "a second attempt")
    assert len(load.acked) == acked, "acks=all went on with a dead follower in the ISR"


def _cluster_whole(url: str, nodes: int) -> bool:
    """Every broker registered (sessions re-established) and a controller elected."""
    cluster = _cluster(url)
    return len(cluster["brokers"]) == nodes and cluster["controller"] is not None


async def _restore_quorum(ensemble: ZooKeeperEnsemble, url: str, stream: str) -> float:
    """Start the killed servers; seconds from the quorum's return to the first create."""
    for server in ensemble.servers:
        if not server.is_running():
            server.spawn()
    await _wait_quorum(ensemble)
    return await _off_loop(_first_create_after, url, stream)


async def test_zookeeper_leader_loss_is_unnoticed_and_quorum_loss_is_safe(ha_zk_stack, stream_name):
    stack: Standalone = ha_zk_stack
    assert stack.ha is not None
    ensemble = stack.ha.zookeeper
    with httpx.Client(base_url=stack.nodes[0].api_url, timeout=30) as api:
        create_stream(api, stream_name, replication_factor=3)
    leader_node = stack.node(_describe(stack.nodes[0], stream_name)["leader"])
    follower = next(n for n in stack.nodes if n is not leader_node)
    url = leader_node.api_url  # the follower is killed later: ask a node that stays up
    async with Client(stack.servers, ack_timeout_s=2) as client:
        load = Load(client, stream_name)
        await load.wait_acked(ACKED_PER_ROUND, ACK_TIMEOUT_S)
        await _lose_the_zookeeper_leader(stack, stream_name, load)

        next(s for s in ensemble.servers if s.is_running()).kill()  # no quorum now
        lost_at, acked_at_loss = time.monotonic(), len(load.acked)
        await _refused_without_quorum(url, stream_name)
        await load.wait_acked(acked_at_loss + ACKED_PER_ROUND, ACK_TIMEOUT_S)
        acks_without_quorum, replicas_up_s = (
            len(load.acked) - acked_at_loss,
            time.monotonic() - lost_at,
        )
        await _dead_follower_stops_acks(leader_node, follower, stream_name, load)

        restarted_at = time.monotonic()
        to_create = await _restore_quorum(ensemble, url, stream_name)
        await load.wait_acked(len(load.acked) + ACKED_PER_ROUND, ACK_TIMEOUT_S)
        to_ack = min(t for t in load.ack_times if t > restarted_at) - restarted_at
        await _off_loop(follower.start)
        await _off_loop(
            wait_for, lambda: _cluster_whole(url, len(stack.nodes)), QUORUM_TIMEOUT_S, 0.2
        )
        await load.wait_acked(len(load.acked) + ACKED_PER_ROUND, ACK_TIMEOUT_S)
        await load.finish()
    print(
        f"no quorum for {restarted_at - lost_at:.1f}s: {acks_without_quorum} acks in the first "
        f"{replicas_up_s:.1f}s (every replica up); quorum restored -> first create "
        f"{to_create:.2f}s; restart -> first ack {to_ack:.2f}s"
    )
    for server in ensemble.servers:
        await _off_loop(server.wait_ready)
    await _off_loop(_wait_isr_full, stack, stream_name)
    await _check_no_acked_loss(stack.nodes, stream_name, load.acked)


def _wait_isr_full(stack: Standalone, stream: str) -> None:
    wait_for(
        lambda: sorted(_describe(stack.nodes[0], stream)["isr"]) == [1, 2, 3],
        QUORUM_TIMEOUT_S,
        message="the restarted follower rejoins the ISR",
    )
