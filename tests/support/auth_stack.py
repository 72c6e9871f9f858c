"""Clusters with authentication on, for the auth tests: plain HTTP nodes with a bootstrap
admin token, or the secured stack (``Standalone(secure=True)``: HTTPS, mTLS, ZooKeeper and
NATS secured) whose client certificates name principals too."""

from __future__ import annotations

import secrets
import ssl
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from liftlog.embedded.certs import CertificateAuthority, CertPaths
from liftlog.embedded.ports import free_port, free_port_block
from liftlog.embedded.standalone import Standalone
from spark_log.auth_config import AuthConfig
from spark_log.client.credentials import ClientCredentials
from tests.integration.conftest import _node_factory
from tests.support.stacks import SecureMaterial
from tests.support.waiting import wait_for

PROPAGATION_TIMEOUT_S = 10.0


@dataclass
class AuthCluster:
    api_urls: list[str]
    admin_token: str = field(repr=False)
    ca_file: str | None = None
    """The CA of an https:// cluster (None: plain HTTP)."""
    ca: CertificateAuthority | None = None
    """Issues client certificates (secured stack only)."""
    cert_dir: Path | None = None
    nats_url: str = ""
    """The secured stack's NATS server, whose logins are Liftlog tokens ("" otherwise)."""
    grpc_addresses: list[str] = field(default_factory=list)
    """Each node's Liftbridge gRPC API (host:port; secured stack only)."""

    def client(
        self, index: int = 0, token: str | None = None, cert: CertPaths | None = None
    ) -> httpx.Client:
        """A client of node ``index`` sending ``token`` and/or presenting ``cert``."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        verify: ssl.SSLContext | bool = True
        if self.ca_file is not None:
            verify = ssl.create_default_context(cafile=self.ca_file)
            if cert is not None:
                verify.load_cert_chain(cert.cert_file, cert.key_file)
        return httpx.Client(
            base_url=self.api_urls[index], headers=headers, verify=verify, timeout=60
        )

    def admin(self, index: int = 0) -> httpx.Client:
        return self.client(index, self.admin_token)

    def grpc_credentials(
        self, token: str | None = None, cert: CertPaths | None = None
    ) -> ClientCredentials:
        """What a gRPC client of the secured stack presents: the stack's CA, ``token`` in
        the ``authorization`` metadata and/or ``cert`` as its client certificate."""
        if self.ca_file is None:
            raise RuntimeError("the gRPC API over TLS needs the secured stack")
        return ClientCredentials(
            token=token or "",
            ca_file=self.ca_file,
            cert_file=cert.cert_file if cert else "",
            key_file=cert.key_file if cert else "",
        )

    def revoke(self, token_id: str) -> None:
        with self.admin() as api:
            resp = api.delete(f"/v1/auth/tokens/{token_id}")
        assert resp.status_code == 200, resp.text

    def client_cert(self, principal: str) -> CertPaths:
        """A client certificate whose subject CN is ``principal`` (secured stack only)."""
        if self.ca is None or self.cert_dir is None:
            raise RuntimeError("client certificates need the secured stack")
        return self.ca.issue_to(
            self.cert_dir, f"user-{principal}", principal, server=False, client=True
        )

    def new_token(self, principal: str) -> tuple[str, str]:
        """(token_id, token) for ``principal``, created through node 0 and usable on every
        node (each applies it from its ZooKeeper watch)."""
        with self.admin() as api:
            created = api.post("/v1/auth/tokens", json={"principal": principal}).json()
        for index in range(len(self.api_urls)):
            with self.client(index, created["token"]) as api:
                wait_for(
                    lambda api=api: api.get("/v1/auth/whoami").status_code == 200,
                    PROPAGATION_TIMEOUT_S,
                    message=f"node {index} to accept the new token",
                )
        return created["token_id"], created["token"]

    def allow(self, principal: str, action: str, resource: str, deny: bool = False) -> str:
        body = {
            "principal": principal,
            "action": action,
            "resource": resource,
            "permission": "deny" if deny else "allow",
        }
        with self.admin() as api:
            resp = api.post("/v1/acls", json=body)
        assert resp.status_code == 201, resp.text
        return str(resp.json()["acl_id"])


def start_auth_cluster(
    zookeeper: Any,
    nats_server: Any,
    root: Path,
    nodes: int = 1,
    *,
    bootstrap_everywhere: bool = True,
    secure_material: SecureMaterial | None = None,
) -> Iterator[AuthCluster]:
    """``nodes`` nodes sharing a fresh ZooKeeper root, auth on; all stopped afterwards.
    Without ``bootstrap_everywhere`` only the first node knows the admin token: the others
    have no credential of their own, so what they forward can only pass as the caller.
    ``secure_material``: the session's secured NATS and ZooKeeper (the nodes still serve
    plain HTTP with this cluster's own token)."""
    # never starting with '-': the CLI's argument parser would read it as an option
    token = f"boot{secrets.token_urlsafe(24)}"
    factory = _node_factory(
        zookeeper, nats_server, root, f"/liftlog-{uuid.uuid4().hex[:12]}", secure_material
    )
    make = next(factory)
    with_token = AuthConfig(enabled=True, bootstrap_token=token)
    without = with_token if bootstrap_everywhere else AuthConfig(enabled=True)
    try:
        started = [
            make(i, start=False, auth=with_token if i == 1 else without)
            for i in range(1, nodes + 1)
        ]
        for node in started:
            node.spawn()  # all at once: they come up in parallel
        for node in started:
            node.wait_ready()
        yield AuthCluster([n.api_url for n in started], token)
    finally:
        next(factory, None)


def start_secure_cluster(nodes: int = 1) -> Iterator[AuthCluster]:
    """``Standalone(secure=True)`` on free ports in a temporary directory."""
    with tempfile.TemporaryDirectory(prefix="liftlog-secure-") as data_dir:
        stack = Standalone(
            nodes=nodes,
            data_dir=data_dir,
            nats_port=free_port(),
            zk_port=free_port(),
            api_port=free_port_block(nodes),
            liftbridge_port=free_port_block(nodes),
            secure=True,
        )
        with stack:
            secure = stack.secure
            assert secure is not None
            certs = secure.certs
            yield AuthCluster(
                [n.api_url for n in stack.nodes],
                secure.admin_token,
                certs.ca_file,
                CertificateAuthority.load(certs.ca_file, certs.ca_key_file),
                Path(data_dir),
                stack.nats.url,
                [n.config.advertised_liftbridge_address for n in stack.nodes],
            )
