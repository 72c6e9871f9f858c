"""A real ingest node on a ZooKeeper reachable over TLS only, with digest ACLs on its znodes.

The node (its ``[zk_security]`` from ``node_zk_security``, as ``standalone --secure`` builds
it) registers, is elected controller, creates a stream and acknowledges publishes; another
ZooKeeper user can neither read nor rewrite nor delete the stream, its partition state, the
broker registration or the controller znode.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from kazoo.exceptions import NoAuthError

from coordinator.znodes import CONTROLLER_PATH, broker_path, partition_state_path, stream_path
from liftlog.embedded.certs import StackCerts
from liftlog.embedded.node import NodeProcess
from liftlog.embedded.zookeeper_tls import node_zk_security
from spark_log.auth_config import AuthConfig
from spark_log.tls_config import ZkSecurityConfig
from tests.integration.conftest import _node_factory, create_stream, fetch
from tests.support.waiting import wait_for


@pytest.fixture
def cluster_security(zk_certs: StackCerts, temp_dir: Path) -> ZkSecurityConfig:
    """What a secured standalone stack gives node 1: TLS with its own certificate and the
    cluster's digest identity (password created in ``temp_dir``)."""
    node = zk_certs.nodes[1]
    return node_zk_security(temp_dir, zk_certs.ca_file, node.cert_file, node.key_file)


@pytest.fixture
def secure_node(
    secure_zk, nats_server, tmp_path: Path, secure_root: str, cluster_security, secure_material
) -> Iterator[NodeProcess]:
    # on the secured stack the node also needs its NATS user (its ZooKeeper is this module's)
    factory = _node_factory(secure_zk, nats_server, tmp_path, secure_root, secure_material)
    make = next(factory)
    yield make(1, zk_security=cluster_security, auth=AuthConfig(enabled=False))
    next(factory, None)


async def test_a_node_on_secured_zookeeper_serves_and_its_znodes_are_locked(
    secure_node, nc, stream_name, make_kazoo, secure_root
):
    with httpx.Client(base_url=secure_node.api_url, timeout=30) as api:
        create_stream(api, stream_name)
        msg = await nc.request(f"{stream_name}.in", b"over tls", timeout=10)
        assert json.loads(msg.data) == {"stream": stream_name, "partition": 0, "offset": 0}
        wait_for(lambda: fetch(api, stream_name)["high_watermark"] == 1, message="committed")
        assert fetch(api, stream_name, offset=0)["records"][0]["value"] == "over tls"

    paths = [
        stream_path(stream_name),
        partition_state_path(stream_name, 0),
        broker_path(1),
        CONTROLLER_PATH,
    ]
    for client in (make_kazoo(), make_kazoo(auth=("mallory", "secret"))):
        for path in (f"{secure_root}{p}" for p in paths):
            with pytest.raises(NoAuthError):
                client.exists(path)
            with pytest.raises(NoAuthError):
                client.get(path)
            with pytest.raises(NoAuthError):
                client.set(path, b'{"leader": 666}')
            with pytest.raises(NoAuthError):
                client.delete(path)
