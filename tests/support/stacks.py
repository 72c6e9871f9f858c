"""Which stack the integration tests run on: ``LIFTLOG_TEST_STACK=plain`` (the default) or
``LIFTLOG_TEST_STACK=secure``.

The plain stack: nodes with auth off, plain HTTP, anonymous plain NATS and ZooKeeper. The
secured stack, as ``liftlog standalone --secure`` runs it: a throwaway CA; nats-server with
TLS, the node user, and every other login a Liftlog token judged by the nodes (auth
callout); ZooKeeper on a TLS port only (client certificates required) with the nodes'
digest ACL; nodes on HTTPS with auth on and the bootstrap token of the super user ``admin``.
The test process (and the CLI subprocesses and Spark's Python workers it starts) reaches it
through the environment: ``LIFTLOG_CREDENTIALS_FILE`` (the admin token and the CA) and
``LIFTLOG_NATS_*`` (``admin`` and its token over TLS), so tests need no change to run on either.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from liftlog.embedded.nats_auth import SecureNats
from liftlog.embedded.standalone_secure import SecureStack
from liftlog.embedded.zookeeper_tls import node_zk_security
from spark_log.client.credentials import ENV_CREDENTIALS_FILE, ENV_NAMES
from spark_log.nats_config import ENV_NATS_FIELDS, NatsCredentials
from spark_log.tls_config import ZkSecurityConfig

STACK_ENV = "LIFTLOG_TEST_STACK"
PLAIN = "plain"
SECURE = "secure"
STACK_KINDS = (PLAIN, SECURE)
# node certificates are issued for these broker ids (the tests' clusters are smaller)
SECURE_BROKER_IDS = list(range(1, 10))


def stack_kind() -> str:
    kind = os.environ.get(STACK_ENV, "").strip().lower() or PLAIN
    if kind not in STACK_KINDS:
        raise pytest.UsageError(f"{STACK_ENV} must be one of {', '.join(STACK_KINDS)}: {kind!r}")
    return kind


def secure_stack() -> bool:
    return stack_kind() == SECURE


def plain_stack_only(reason: str) -> pytest.MarkDecorator:
    """Skip on the secured stack: the test needs the plain one by nature (``reason`` says
    why; the plain run covers it)."""
    return pytest.mark.skipif(secure_stack(), reason=f"plain stack only: {reason}")


@dataclass(frozen=True)
class SecureMaterial:
    """The secured stack's certificates, tokens and passwords (no server yet)."""

    stack: SecureStack
    nats: SecureNats
    zk_security: ZkSecurityConfig = field(repr=False)

    @classmethod
    def create(cls, directory: Path) -> SecureMaterial:
        stack = SecureStack.prepare(directory, SECURE_BROKER_IDS)
        node = stack.certs.nodes[SECURE_BROKER_IDS[0]]
        # the digest identity every node of the session shares (each test has its own root)
        zk_security = node_zk_security(
            stack.tls_dir, stack.certs.ca_file, node.cert_file, node.key_file
        )
        return cls(stack, stack.secure_nats(), zk_security)

    @property
    def ca_file(self) -> str:
        return self.stack.certs.ca_file

    @property
    def admin_token(self) -> str:
        return self.stack.admin_token

    def node_settings(self, broker_id: int) -> dict[str, Any]:
        """``NodeConfig`` fields of node ``broker_id``: HTTPS, auth with the admin token, its
        NATS user over TLS and its ZooKeeper TLS (own certificate) and digest identity."""
        settings = self.stack.node_settings(broker_id)
        own = self.stack.certs.nodes[broker_id]
        settings["nats"] = self.nats.node
        settings["zk_security"] = ZkSecurityConfig(
            ca_file=self.zk_security.ca_file,
            cert_file=own.cert_file,
            key_file=own.key_file,
            digest_user=self.zk_security.digest_user,
            digest_password_file=self.zk_security.digest_password_file,
        )
        return settings

    def client_env(self) -> dict[str, str]:
        """What the test process exports: REST credentials and the NATS publisher."""
        publisher: NatsCredentials = self.nats.publisher
        env = {ENV_CREDENTIALS_FILE: str(self.stack.credentials_file)}
        for name, variable in ENV_NATS_FIELDS.items():
            value = getattr(publisher, name)
            if value:
                env[variable] = value
        return env


# every client setting a test run may inherit from the shell; the secured run replaces them
CLIENT_ENV_NAMES = (ENV_CREDENTIALS_FILE, *ENV_NAMES.values(), *ENV_NATS_FIELDS.values())


def exported(env: Mapping[str, str]) -> Iterator[None]:
    """Set ``env`` (and clear the other client variables) for the session; restored after."""
    with pytest.MonkeyPatch.context() as patch:
        for name in CLIENT_ENV_NAMES:
            patch.delenv(name, raising=False)
        for name, value in env.items():
            patch.setenv(name, value)
        yield
