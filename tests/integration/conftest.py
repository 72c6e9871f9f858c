"""Fixtures that run real ingest nodes (child processes) against the session's NATS and ZK.

On the secured stack (``LIFTLOG_TEST_STACK=secure``, see tests/support/stacks.py) the nodes serve
HTTPS with auth on, log in to NATS and ZooKeeper over TLS, and the test process reaches them
with the admin token and the NATS publisher user from the environment.
"""

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
from liftlog.embedded.ports import free_port
from spark_log.api_models import ClusterInfo
from spark_log.auth_config import AuthConfig
from spark_log.client.credentials import ClientCredentials
from spark_log.config import LakeConfig, LogConfig, NodeConfig
from spark_log.nats_config import nats_credentials_from_env
from spark_log.nats_options import nats_auth_options
from tests.support.lake_stores import LAKE_KINDS, S3, LakeUnderTest, local_lake, s3_lake
from tests.support.secure_zk import (  # noqa: F401  (the TLS-only ZooKeeper's fixtures)
    cluster_security,
    make_kazoo,
    secure_root,
    secure_zk,
    zk_certs,
)
from tests.support.spark_session import spark  # noqa: F401  (the shared Spark fixture)
from tests.support.stacks import SecureMaterial, exported
from tests.support.waiting import wait_for

NODE_ZK_SESSION_TIMEOUT_S = 4.0

NodeFactory = Callable[..., NodeProcess]


@pytest.fixture(scope="session", autouse=True)
def stack_environment(secure_material: SecureMaterial | None) -> Iterator[None]:
    """On the secured stack: the client credentials every test (its ``Client``s and
    ``RestClient``s, the CLI and Spark's Python workers it starts) finds in the environment.
    Set before any node or Spark session starts, so their children inherit it."""
    if secure_material is None:
        yield
        return
    yield from exported(secure_material.client_env())


def node_client(base_url: str, timeout: float = 30, **kwargs: Any) -> httpx.Client:
    """An HTTP client of a node: on the secured stack it sends the admin token and trusts
    the stack's CA (both from the environment ``stack_environment`` exported)."""
    credentials = ClientCredentials.resolve()
    return httpx.Client(
        base_url=base_url,
        timeout=timeout,
        headers=credentials.headers(),
        verify=credentials.ssl_context() or True,
        **kwargs,
    )


def _node_factory(
    zookeeper: Any,
    nats_server: Any,
    root: Path,
    zk_root: str,
    secure_material: SecureMaterial | None = None,
) -> Iterator[NodeFactory]:
    started: list[NodeProcess] = []

    def make(
        broker_id: int = 1, *, log: LogConfig | None = None, start: bool = True, **overrides: Any
    ) -> NodeProcess:
        # one lake for the whole cluster, as in production: a new leader continues the table
        overrides.setdefault("lake", LakeConfig(uri=str(root / "lake")))
        if secure_material is not None:
            # HTTPS, auth with the admin token, NATS and ZooKeeper over TLS with credentials;
            # a test bringing its own AuthConfig (an auth test's cluster) keeps plain HTTP
            settings = secure_material.node_settings(broker_id)
            if "auth" in overrides:
                del settings["auth"], settings["api_tls"]
            for name, value in settings.items():
                overrides.setdefault(name, value)
        # the plain stack checks no credentials; auth tests pass their own AuthConfig
        overrides.setdefault("auth", AuthConfig(enabled=False))
        config = NodeConfig(
            broker_id=broker_id,
            data_dir=str(root / f"node-{broker_id}"),
            api_port=free_port(),
            liftbridge_port=free_port(),
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
    for proc in started:  # every node shuts down at once: a cluster stops as fast as one node
        proc.terminate()
    for proc in started:
        proc.stop()


@pytest.fixture
def make_node(
    zookeeper: Any, nats_server: Any, tmp_path: Path, secure_material: SecureMaterial | None
) -> Iterator[NodeFactory]:
    """Start nodes with their own ZooKeeper root and data dirs; all stopped after the test."""
    yield from _node_factory(
        zookeeper, nats_server, tmp_path, f"/liftlog-{uuid.uuid4().hex[:12]}", secure_material
    )


@pytest.fixture(scope="module")
def make_module_node(
    zookeeper: Any,
    nats_server: Any,
    tmp_path_factory: pytest.TempPathFactory,
    secure_material: SecureMaterial | None,
) -> Iterator[NodeFactory]:
    """``make_node`` for a cluster a whole test module shares (each test its own streams):
    a module of short tests does not pay a cluster's start and stop per test."""
    yield from _node_factory(
        zookeeper,
        nats_server,
        tmp_path_factory.mktemp("nodes"),
        f"/liftlog-{uuid.uuid4().hex[:12]}",
        secure_material,
    )


@pytest.fixture(scope="module")
def node(
    zookeeper: Any,
    nats_server: Any,
    tmp_path_factory: pytest.TempPathFactory,
    secure_material: SecureMaterial | None,
) -> Iterator[NodeProcess]:
    """One node shared by a test module (tests use their own stream names)."""
    root = tmp_path_factory.mktemp("node")
    factory = _node_factory(
        zookeeper, nats_server, root, f"/liftlog-{uuid.uuid4().hex[:12]}", secure_material
    )
    make = next(factory)
    yield make(1)
    next(factory, None)


@pytest.fixture
def api(node: NodeProcess) -> Iterator[httpx.Client]:
    with node_client(node.api_url) as client:
        yield client


def nats_client_options() -> dict[str, Any]:
    """``nats.connect`` arguments of a publisher: on the secured stack the publisher user
    over TLS (``LIFTLOG_NATS_*`` from ``stack_environment``), nothing on the plain one."""
    return nats_auth_options(nats_credentials_from_env())


@pytest.fixture
async def nc(nats_server: Any) -> AsyncIterator[nats.NATS]:
    """A publisher's NATS connection."""
    conn = await nats.connect(nats_server.url, **nats_client_options())
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
    """Create a stream and wait until every partition's leader leads it: a 201 says the node
    that answered serves the stream, while the others learn of it through their ZooKeeper
    watch, so a publish sent to a leader at once could find it still unknown there."""
    resp = api.post("/v1/streams", json={"name": name, "subject": subject or f"{name}.in", **spec})
    assert resp.status_code == 201, resp.text
    created: dict[str, Any] = resp.json()
    urls = ClusterInfo.from_json(api.get("/v1/cluster").json()).api_urls()
    for partition in created["partitions"]:
        url = urls.get(partition["leader"])
        if url is not None:
            path = f"{url}/v1/streams/{name}/partitions/{partition['partition']}"
            wait_for(
                lambda path=path: _leads_or_is_gone(api, path),
                message=f"the leader of {name}/{partition['partition']} to lead it",
            )
    return created


def _leads_or_is_gone(api: httpx.Client, path: str) -> bool:
    """Whether the replica at ``path`` leads; a leader that cannot be reached (a test killed
    it) is not waited for."""
    try:
        resp = api.get(path)
    except httpx.TransportError:
        return True
    return resp.status_code == 200 and resp.json().get("role") == "leader"


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
