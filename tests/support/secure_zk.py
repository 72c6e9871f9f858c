"""A real ZooKeeper listening on a TLS port only (client certificates required), its
throwaway CA, and kazoo clients of other ZooKeeper users for the ACL tests.

Import the fixtures into a test module (``from tests.support.secure_zk import ...  #
noqa: F401``); the server is shared by the whole session and stopped by PID at its end.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from coordinator.errors import ZNodeNotFoundError
from coordinator.zk import ZkSession
from liftlog.embedded.certs import StackCerts, generate_stack_certs
from liftlog.embedded.ports import free_port
from liftlog.embedded.zookeeper import ZooKeeperServer, secure_zookeeper
from spark_log.tls_config import ZkSecurityConfig
from tests.support.waiting import wait_for

SECURE_ZK_SESSION_TIMEOUT_S = 6.0
CLUSTER_DIGEST_USER = "liftlog"
ATTACKER_CONNECT_TIMEOUT_S = 10.0


@pytest.fixture(scope="session")
def zk_certs() -> Iterator[StackCerts]:
    """A CA and certificates: node 1, the ZooKeeper server, a client-only ``admin``."""
    directory = Path(tempfile.mkdtemp(prefix="liftlog-zk-certs-"))
    try:
        yield generate_stack_certs(directory / "tls", [1])
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def secure_zk(zk_certs: StackCerts) -> Iterator[ZooKeeperServer]:
    """ZooKeeper with a secure client port only; it requires a client certificate."""
    data_dir = Path(tempfile.mkdtemp(prefix="liftlog-secure-zk-"))
    server = secure_zookeeper(
        free_port(),
        data_dir,
        cert_file=zk_certs.zookeeper.cert_file,
        key_file=zk_certs.zookeeper.key_file,
        ca_file=zk_certs.ca_file,
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


def tls_only(certs: StackCerts) -> ZkSecurityConfig:
    """TLS with node 1's client certificate, no digest identity."""
    node = certs.nodes[1]
    return ZkSecurityConfig(ca_file=certs.ca_file, cert_file=node.cert_file, key_file=node.key_file)


def with_digest(certs: StackCerts, user: str, password: str) -> ZkSecurityConfig:
    """TLS plus the digest identity ``user``."""
    node = certs.nodes[1]
    return ZkSecurityConfig(
        ca_file=certs.ca_file,
        cert_file=node.cert_file,
        key_file=node.key_file,
        digest_user=user,
        digest_password=password,
    )


@pytest.fixture
def cluster_security(zk_certs: StackCerts) -> ZkSecurityConfig:
    """The cluster's identity for this test: TLS and a fresh digest password."""
    return with_digest(zk_certs, CLUSTER_DIGEST_USER, uuid.uuid4().hex)


@pytest.fixture
def secure_root(secure_zk: ZooKeeperServer, cluster_security: ZkSecurityConfig) -> Iterator[str]:
    """A root of the test's own; deleted afterwards with the cluster's identity."""
    root = f"/liftlog-secure-{uuid.uuid4().hex[:12]}"
    yield root
    with ZkSession(secure_zk.connect_string, root, security=cluster_security) as cleaner:
        with contextlib.suppress(ZNodeNotFoundError):
            cleaner.delete_recursive("/")
        wait_for(lambda: not cleaner.exists("/"), message=f"{root} deleted")


@pytest.fixture
def make_kazoo(
    secure_zk: ZooKeeperServer, zk_certs: StackCerts
) -> Iterator[Callable[..., KazooClient]]:
    """Plain kazoo clients of other ZooKeeper users: TLS with the ``admin`` certificate
    (a legitimate user of the same ZooKeeper) and optionally a digest identity."""
    clients: list[KazooClient] = []

    def make(auth: tuple[str, str] | None = None) -> KazooClient:
        client = KazooClient(
            secure_zk.connect_string,
            use_ssl=True,
            ca=zk_certs.ca_file,
            certfile=zk_certs.admin.cert_file,
            keyfile=zk_certs.admin.key_file,
            auth_data=[("digest", f"{auth[0]}:{auth[1]}")] if auth else None,
        )
        clients.append(client)
        client.start(timeout=ATTACKER_CONNECT_TIMEOUT_S)
        return client

    yield make
    for client in clients:
        client.stop()
        client.close()
