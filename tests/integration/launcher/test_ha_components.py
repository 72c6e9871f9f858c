"""The HA building blocks with real processes: a 3-server NATS cluster, a 3-server ZooKeeper
ensemble, a node advertising URLs other than its bind address, and a node that keeps acking
when the NATS server it is attached to is SIGKILLed."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import nats
import nats.errors
import pytest

from coordinator.brokers import live_brokers
from coordinator.zk import ZkSession
from liftlog.embedded.nats_cluster import NatsCluster
from liftlog.embedded.node import NodeProcess
from liftlog.embedded.ports import free_port
from liftlog.embedded.zookeeper_ensemble import ZooKeeperEnsemble
from spark_log.auth_config import AuthConfig
from spark_log.config import LakeConfig, NodeConfig
from tests.integration.conftest import create_stream
from tests.support.scrape import scrape, total
from tests.support.stacks import plain_stack_only
from tests.support.waiting import wait_for

CLUSTER_SIZE = 3
ZK_SESSION_TIMEOUT_S = 4.0
ACK_TIMEOUT_S = 0.5
RECOVERY_TIMEOUT_S = 60.0
DELIVERY_TIMEOUT_S = 10.0
ADVERTISED_HOST = "127.0.0.2"  # resolves locally; the registration need not be reachable


PLAIN_ZOOKEEPER = plain_stack_only(
    "builds its node config by hand for the plain ZooKeeper and NATS (HA components under test)"
)


@pytest.fixture
def nats_cluster(temp_dir: Path) -> Iterator[NatsCluster]:
    with NatsCluster(temp_dir / "nats", CLUSTER_SIZE) as cluster:
        yield cluster


@pytest.fixture
def zk_ensemble(temp_dir: Path) -> Iterator[ZooKeeperEnsemble]:
    with ZooKeeperEnsemble(temp_dir / "zk", CLUSTER_SIZE) as ensemble:
        yield ensemble


async def test_nats_cluster_routes_a_message_between_servers(nats_cluster: NatsCluster) -> None:
    first, last = nats_cluster.urls[0], nats_cluster.urls[-1]
    subscriber = await nats.connect(last)
    publisher = await nats.connect(first)
    try:
        sub = await subscriber.subscribe("ha.route")
        await subscriber.flush()
        deadline = time.monotonic() + DELIVERY_TIMEOUT_S
        while True:  # the subscription's interest reaches the other servers asynchronously
            await publisher.publish("ha.route", b"across")
            try:
                msg = await sub.next_msg(timeout=0.2)
                break
            except nats.errors.TimeoutError:
                assert time.monotonic() < deadline, "no message crossed the cluster route"
        assert msg.data == b"across"
        assert publisher.connected_url is not None and subscriber.connected_url is not None
        assert publisher.connected_url.port != subscriber.connected_url.port
    finally:
        await publisher.close()
        await subscriber.close()


def test_zookeeper_ensemble_survives_losing_one_server(zk_ensemble: ZooKeeperEnsemble) -> None:
    assert zk_ensemble.leader() is not None
    session = ZkSession(zk_ensemble.connect_string, "/ha-test", ZK_SESSION_TIMEOUT_S).start()
    session_id = session.session_id
    try:
        session.ensure_path("/probe")
        session.create_json("/probe/before", {"n": 1})
        # one of three is what the ensemble tolerates; stop the leader, the hardest case
        leader = zk_ensemble.leader()
        assert leader is not None
        leader.stop()
        wait_for(
            lambda: sum(s.is_ready() for s in zk_ensemble.servers if s.is_running()) == 2,
            timeout_s=30,
            message="a new leader among the two remaining servers",
        )
        session.create_json("/probe/after", {"n": 2})
        assert sorted(session.children("/probe")) == ["after", "before"]
        assert session.session_id == session_id  # the same session: nothing noticed
    finally:
        session.stop()


def _node_config(root: Path, zk_connect: str, **settings: Any) -> NodeConfig:
    return NodeConfig(
        broker_id=1,
        data_dir=str(root / "node-1"),
        api_port=free_port(),
        liftbridge_port=free_port(),
        zk_connect=zk_connect,
        zk_root=f"/liftlog-{uuid.uuid4().hex[:12]}",
        zk_session_timeout_s=ZK_SESSION_TIMEOUT_S,
        lake=LakeConfig(uri=str(root / "lake")),
        **{"auth": AuthConfig(enabled=False), **settings},
    )


@pytest.fixture
def start_node(temp_dir: Path) -> Iterator[Any]:
    started: list[NodeProcess] = []

    def start(config: NodeConfig) -> NodeProcess:
        proc = NodeProcess(config, temp_dir / "node-1.toml")
        started.append(proc)
        return proc.start()

    yield start
    for proc in started:
        proc.stop()


@PLAIN_ZOOKEEPER
def test_node_registers_and_reports_its_advertised_urls(
    temp_dir: Path, zookeeper: Any, nats_server: Any, start_node: Any
) -> None:
    advertised_api = f"http://{ADVERTISED_HOST}:{free_port()}"
    advertised_nats = f"nats://{ADVERTISED_HOST}:14222"
    config = _node_config(
        temp_dir,
        zookeeper.connect_string,
        nats_servers=(nats_server.url,),
        api_advertised_url=advertised_api,
        nats_advertised_url=advertised_nats,
    )
    node = start_node(config)
    assert node.api_url != advertised_api  # probed on the bind address
    cluster = httpx.get(f"{node.api_url}/v1/cluster", timeout=10).json()
    [broker] = cluster["brokers"]
    assert (broker["api_url"], broker["nats_url"]) == (advertised_api, advertised_nats)
    assert broker["host"] == ADVERTISED_HOST
    session = ZkSession(zookeeper.connect_string, config.zk_root, ZK_SESSION_TIMEOUT_S).start()
    try:
        [registered] = live_brokers(session)
    finally:
        session.stop()
    assert registered.api_url == advertised_api


async def _ack(nc: nats.NATS, subject: str) -> bool:
    try:
        reply = await nc.request(subject, b"payload", timeout=ACK_TIMEOUT_S)
    except (nats.errors.TimeoutError, nats.errors.NoRespondersError):
        return False
    return b'"offset"' in reply.data


@PLAIN_ZOOKEEPER
async def test_node_keeps_acking_after_its_nats_server_is_killed(
    temp_dir: Path, zookeeper: Any, nats_cluster: NatsCluster, start_node: Any
) -> None:
    config = _node_config(
        temp_dir, zookeeper.connect_string, nats_servers=tuple(nats_cluster.urls_from(0))
    )
    node = start_node(config)
    with httpx.Client(base_url=node.api_url, timeout=30) as api:
        create_stream(api, "ha-acks", "ha.acks")
    # the publisher sits on a server that survives, with the others as fallbacks
    publisher = await nats.connect(servers=nats_cluster.urls_from(1), dont_randomize=True)
    try:
        assert await _wait_ack(publisher, "ha.acks", RECOVERY_TIMEOUT_S)
        killed_at = time.monotonic()
        nats_cluster.servers[0].kill()
        assert await _wait_ack(publisher, "ha.acks", RECOVERY_TIMEOUT_S)
        recovery_s = time.monotonic() - killed_at
        print(f"\nacks resumed {recovery_s * 1000:.0f} ms after SIGKILL of the node's NATS server")
    finally:
        await publisher.close()
    with httpx.Client(base_url=node.api_url, timeout=10) as api:
        samples = scrape(api)
    # it did lose its server: both of its connections (nats-py's and the intake's) did
    assert total(samples, "liftlog_nats_disconnects_total") >= 2.0


async def _wait_ack(nc: nats.NATS, subject: str, timeout_s: float) -> bool:
    """Publish until one publish is acked; False after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if await _ack(nc, subject):
            return True
    return False
