"""Fixtures that run real ingest nodes (child processes) against the session's NATS and ZK."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import nats
import pytest

from liftlog.embedded.node import NodeProcess
from liftlog.embedded.process import free_port
from spark_log.auth_config import AuthConfig
from spark_log.config import LakeConfig, LogConfig, NodeConfig
from tests.integration.secure_zk import (  # noqa: F401  (the TLS-only ZooKeeper's fixtures)
    cluster_security,
    make_kazoo,
    secure_root,
    secure_zk,
    zk_certs,
)
from tests.integration.spark_session import spark  # noqa: F401  (the shared Spark fixture)
from tests.lake_stores import LAKE_KINDS, S3, LakeUnderTest, local_lake, s3_lake

NODE_ZK_SESSION_TIMEOUT_S = 4.0

NodeFactory = Callable[..., NodeProcess]


def _node_factory(
    zookeeper: Any, nats_server: Any, root: Path, zk_root: str
) -> Iterator[NodeFactory]:
    started: list[NodeProcess] = []

    def make(
        broker_id: int = 1, *, log: LogConfig | None = None, start: bool = True, **overrides: Any
    ) -> NodeProcess:
        # one lake for the whole cluster, as in production: a new leader continues the table
        overrides.setdefault("lake", LakeConfig(uri=str(root / "lake")))
        # the plain stack checks no credentials; auth tests pass their own AuthConfig
        overrides.setdefault("auth", AuthConfig(enabled=False))
        config = NodeConfig(
            broker_id=broker_id,
            data_dir=str(root / f"node-{broker_id}"),
            api_port=free_port(),
            nats_url=nats_server.url,
            zk_connect=zookeeper.connect_string,
            zk_root=zk_root,
            zk_session_timeout_s=NODE_ZK_SESSION_TIMEOUT_S,
            log=log or LogConfig(),
            **overrides,
        )
        proc = NodeProcess(config, root / f"node-{broker_id}.toml")
        started.append(proc)
        if start:
            proc.start()
        return proc

    yield make
    for proc in started:
        proc.stop()


@pytest.fixture
def make_node(zookeeper: Any, nats_server: Any, tmp_path: Path) -> Iterator[NodeFactory]:
    """Start nodes with their own ZooKeeper root and data dirs; all stopped after the test."""
    yield from _node_factory(zookeeper, nats_server, tmp_path, f"/liftlog-{uuid.uuid4().hex[:12]}")


@pytest.fixture(scope="module")
def node(
    zookeeper: Any, nats_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[NodeProcess]:
    """One node shared by a test module (tests use their own stream names)."""
    root = tmp_path_factory.mktemp("node")
    factory = _node_factory(zookeeper, nats_server, root, f"/liftlog-{uuid.uuid4().hex[:12]}")
    make = next(factory)
    yield make(1)
    next(factory, None)


@pytest.fixture
def api(node: NodeProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=node.api_url, timeout=30) as client:
        yield client


@pytest.fixture
async def nc(nats_server: Any) -> AsyncIterator[nats.NATS]:
    conn = await nats.connect(nats_server.url)
    yield conn
    await conn.drain()


@pytest.fixture
def stream_name(request: pytest.FixtureRequest) -> str:
    """A stream (and subject) name unique to the test."""
    base = re.sub(r"[^A-Za-z0-9]+", "-", request.node.name).strip("-").lower()[:40]
    return f"{base}-{uuid.uuid4().hex[:6]}"


def create_stream(
    api: httpx.Client, name: str, subject: str | None = None, **spec: Any
) -> dict[str, Any]:
    resp = api.post("/v1/streams", json={"name": name, "subject": subject or f"{name}.in", **spec})
    assert resp.status_code == 201, resp.text
    return resp.json()


def fetch(api: httpx.Client, name: str, partition: int = 0, **params: Any) -> dict[str, Any]:
    resp = api.get(
        f"/v1/streams/{name}/partitions/{partition}/records", params={"encoding": "utf-8", **params}
    )
    assert resp.status_code == 200, resp.text
    return resp.json()


@pytest.fixture(params=LAKE_KINDS)
def test_lake(request: pytest.FixtureRequest, tmp_path: Path) -> LakeUnderTest:
    """The cluster's lake: a local directory, then a bucket on the real S3 server."""
    if request.param == S3:
        bucket, credentials = request.getfixturevalue("s3_bucket")
        return s3_lake(bucket, credentials)
    return local_lake(tmp_path)
