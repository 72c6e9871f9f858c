"""After its session expired, a node registers again even when the first attempt fails.

A node that gave up after one failed attempt stayed unregistered (invisible to the controller)
and fenced for as long as it ran. Here the broker id is held by another live session when the
node reconnects, so the first attempt fails (BrokerIdInUseError after the node's wait); once
that session ends, a later attempt registers the node and lifts its fence. Real ZooKeeper; the
node's replicas are replaced by a recorder (no NATS is needed for registration).
"""

from __future__ import annotations

import asyncio
import logging

from coordinator.brokers import live_brokers, register_broker
from coordinator.znodes import BrokerInfo
from ingest.node import IngestNode
from spark_log.config import NodeConfig
from spark_log.tls_config import ZkSecurityConfig
from tests.support.waiting import wait_for_async

# short, so the node's first attempt (two session timeouts plus 5 s) fails quickly
NODE_SESSION_TIMEOUT_S = 1.0
REGISTERED_WITHIN_S = 30.0
NODE_LOGGER = "liftlog.node"


class FenceRecorder:
    """Stands in for the ReplicaManager: records each fence_leaders call."""

    def __init__(self) -> None:
        self.calls: list[str | None] = []

    def fence_leaders(self, reason: str | None) -> None:
        self.calls.append(reason)


async def test_a_node_retries_registering_after_its_session_expired(
    zookeeper, zk_root, zk_security, make_zk_session, tmp_path, caplog
):
    caplog.set_level(logging.ERROR, logger=NODE_LOGGER)
    config = NodeConfig(
        broker_id=1,
        data_dir=str(tmp_path),
        zk_connect=zookeeper.connect_string,
        zk_root=zk_root,
        zk_session_timeout_s=NODE_SESSION_TIMEOUT_S,
        zk_security=zk_security or ZkSecurityConfig(),  # the secured stack's TLS and digest
    )
    node = IngestNode(config)
    fences = FenceRecorder()
    node.replicas = fences  # type: ignore[assignment]
    node._loop = asyncio.get_running_loop()
    other = make_zk_session()
    impostor = BrokerInfo(1, "other", "http://other:1", "nats://other:1", 0)
    await asyncio.to_thread(register_broker, other, impostor)
    await asyncio.to_thread(node.zk.start)
    try:
        node._zk_state_changed("lost")
        assert fences.calls == ["ZooKeeper session lost"]
        node._zk_state_changed("connected")  # starts re-registering on the new session

        first_attempt_s = 2 * NODE_SESSION_TIMEOUT_S + 5
        await wait_for_async(
            lambda: any("could not re-register" in r.getMessage() for r in caplog.records),
            first_attempt_s + REGISTERED_WITHIN_S,
            interval_s=0.2,
            message="the first attempt failed (the id is taken)",
        )
        assert fences.calls == ["ZooKeeper session lost"], "still fenced"
        await asyncio.to_thread(other.stop)  # the id is free again: a retry must take it

        def registered() -> bool:
            brokers = live_brokers(node.zk)
            return [b.api_url for b in brokers] == [config.advertised_api_url]

        await wait_for_async(
            lambda: fences.calls[-1] is None and registered(),
            REGISTERED_WITHIN_S,
            interval_s=0.2,
            message="registered again and the fence lifted",
        )
    finally:
        node._stopping.set()
        for task in list(node._background):
            task.cancel()
        await asyncio.gather(*node._background, return_exceptions=True)
        await asyncio.to_thread(node.zk.stop)
