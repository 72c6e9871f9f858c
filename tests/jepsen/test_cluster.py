"""The proxies really carry the links: cutting them moves the cluster, healing brings it back.

Isolating the partition leader's NATS server from its peers (the 2013 Kafka case) drops the
followers out of the ISR; healing brings them back. Cutting a node from ZooKeeper expires its
session (the controller no longer lists it); healing re-registers it.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import httpx
import pytest

from tests.support.jepsen.cluster import ClusterError, JepsenCluster, jepsen_cluster  # noqa: F401
from tests.support.waiting import wait_for, wait_for_async

pytestmark = [pytest.mark.fault, pytest.mark.slow]

REPLICA_LAG_TIME_MAX_S = 3.0
ZK_SESSION_TIMEOUT_S = 6.0
CHANGE_TIMEOUT_S = 60.0  # lag time or session timeout, plus the controller's reaction


FAST_DETECTION = {
    "node_overrides": {
        "replica_lag_time_max_s": REPLICA_LAG_TIME_MAX_S,
        "zk_session_timeout_s": ZK_SESSION_TIMEOUT_S,
    }
}


def _isr_or_none(cluster: JepsenCluster, stream: str) -> set[int] | None:
    try:
        return cluster.isr(stream)
    except ClusterError:
        return None


def _assert_links_proxied(cluster: JepsenCluster) -> None:
    """Every route pair and every node's ZooKeeper session has a connection through a proxy."""
    for i in cluster.node_ids:
        for j in cluster.node_ids:
            if i < j:
                pair = cluster.nats_route(i, j).connection_count
                assert pair + cluster.nats_route(j, i).connection_count > 0, (i, j)
        zk = sum(cluster.zk_link(i, z).connection_count for z in cluster.node_ids)
        assert zk > 0, f"node {i} has no proxied ZooKeeper connection"


def _publish_to_leader(cluster: JepsenCluster, stream: str, leader: int) -> None:
    """One record on the leader (acks=leader: it cannot reach the ISR), so followers lag."""
    response = httpx.post(
        f"{cluster.api(leader)}/v1/streams/{stream}/partitions/0/records",
        params={"ack_policy": "leader", "encoding": "utf-8"},
        json={"records": [{"value": "while-isolated"}]},
        timeout=10.0,
    )
    assert response.is_success, response.text


@pytest.mark.parametrize("jepsen_cluster", [FAST_DETECTION], indirect=True)
def test_isolating_the_leader_shrinks_the_isr_and_heal_restores_it(
    jepsen_cluster: JepsenCluster,  # noqa: F811 (the fixture imported above)
) -> None:
    cluster = jepsen_cluster
    stream = "isolation"
    cluster.create_stream(stream, partitions=1, rf=3)
    everyone = set(cluster.node_ids)
    wait_for(lambda: _isr_or_none(cluster, stream) == everyone, CHANGE_TIMEOUT_S, message="ISR")
    leader = cluster.partition_leader(stream)
    assert leader is not None
    _assert_links_proxied(cluster)
    assert cluster.unproxied_routes() == []

    cluster.isolate_from_peers(leader)
    _publish_to_leader(cluster, stream, leader)
    wait_for(
        lambda: _isr_or_none(cluster, stream) == {leader},
        CHANGE_TIMEOUT_S,
        message=f"followers of node {leader} out of the ISR",
    )

    cluster.heal()
    wait_for(
        lambda: _isr_or_none(cluster, stream) == everyone,
        CHANGE_TIMEOUT_S,
        message="followers back in the ISR",
    )
    assert cluster.unproxied_routes() == []  # the heal's route gossip found no way around

    controller = cluster.controller()
    assert controller is not None
    cut = next(n for n in cluster.node_ids if n != controller)
    cluster.cut_from_zookeeper(cut)
    wait_for(
        lambda: cut not in cluster.live_brokers(via=[controller]),
        CHANGE_TIMEOUT_S,
        message=f"node {cut}'s session expired",
    )
    cluster.heal()
    wait_for(
        lambda: cut in cluster.live_brokers(via=[controller]),
        CHANGE_TIMEOUT_S,
        message=f"node {cut} registered again",
    )


SMALL_DISK_BYTES = 64 * 1024 * 1024


def _publish(cluster: JepsenCluster, stream: str, node: int, count: int) -> None:
    response = httpx.post(
        f"{cluster.api(node)}/v1/streams/{stream}/partitions/0/records",
        params={"ack_policy": "all", "encoding": "utf-8"},
        json={"records": [{"value": f"r{i}"} for i in range(count)]},
        timeout=30.0,
    )
    assert response.is_success, response.text


async def test_power_loss_and_full_disk_on_an_unsafe_cluster(temp_dir: Path) -> None:
    """Unsafe settings reach the node and the stream; a power loss cuts a follower's unsynced
    tail and it rejoins the ISR after restart; its small disk fills and frees. Async: what
    blocks (start, stop, restart, a SIGKILL and its reaping) runs off the loop."""
    cluster = JepsenCluster(
        temp_dir / "jepsen",
        unsafe=True,
        node_overrides={"replica_lag_time_max_s": REPLICA_LAG_TIME_MAX_S},
        small_disks={3: SMALL_DISK_BYTES},
    )
    async with cluster.running():
        assert all(cluster.node(n).config.log.fsync == "never" for n in cluster.node_ids)
        assert cluster.create_stream("unsafe", partitions=1, rf=3)["min_isr"] == 1
        everyone = set(cluster.node_ids)
        await wait_for_async(lambda: _isr_or_none(cluster, "unsafe") == everyone, CHANGE_TIMEOUT_S)
        leader = cluster.partition_leader("unsafe")
        assert leader is not None
        _publish(cluster, "unsafe", leader, 50)
        victim = next(n for n in cluster.node_ids if n != leader)

        faults = await asyncio.to_thread(cluster.power_loss, victim)
        assert not cluster.node(victim).is_running()
        assert faults and all(f.kind == "lose_unsynced_tail" for f in faults)
        await asyncio.to_thread(cluster.restart, victim)
        await wait_for_async(
            lambda: _isr_or_none(cluster, "unsafe") == everyone,
            CHANGE_TIMEOUT_S,
            message=f"node {victim} back in the ISR after a power loss",
        )

        disk = cluster.node_data_dir(3)
        assert os.path.ismount(disk)
        cluster.fill_disk(3)
        assert os.statvfs(disk).f_bavail == 0
        cluster.free_disk(3)
        assert os.statvfs(disk).f_bavail > 0
    assert not os.path.ismount(disk)  # unmounted after the node stopped
