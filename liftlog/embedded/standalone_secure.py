"""``liftlog standalone --secure``: the stack with TLS everywhere and authentication on.

What it adds under the data directory::

    tls/ca.pem, ca.key           the throwaway CA (kept across restarts: clients trust it)
    tls/node-<i>.pem/.key        node i: HTTPS server certificate and its client certificate
                                 (CN liftlog-node-<i>) for calls to other nodes and ZooKeeper
    tls/nats.pem/.key            the NATS server's certificate
    tls/zookeeper.pem/.key       the ZooKeeper server's certificate
    tls/admin.pem/.key           a client certificate for the principal ``admin``
    tls/admin.token              the bootstrap token of ``admin`` (kept across restarts)
    tls/nats-publisher.env       LIFTLOG_NATS_* logging in to NATS as ``admin`` with its token
    tls/nats-callout-issuer.nk   the seed the nodes sign NATS logins with (auth callout)
    tls/nats-node.password       the nodes' NATS password, tls/nats-system.password the
                                 system user's (the nodes disconnect clients through it)
    credentials.toml             token + CA for the CLI and the client
                                 (``LIFTLOG_CREDENTIALS_FILE=<data-dir>/credentials.toml``)

Every file holding a key, a token or a password is readable by its owner only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ingest.security import nats_jwt
from liftlog.embedded.certs import ADMIN_PRINCIPAL, StackCerts, generate_stack_certs
from liftlog.embedded.nats_auth import (
    CALLOUT_ACCOUNT,
    DEFAULT_SYSTEM_USER,
    CalloutSecrets,
    NatsServerTls,
    SecureNats,
    callout_nats,
    generated_password,
)
from liftlog.embedded.zookeeper_tls import ZkServerTls
from spark_log.auth.tokens import new_token
from spark_log.auth_config import AuthConfig
from spark_log.nats_auth_config import NatsAuthConfig
from spark_log.nats_config import (
    ENV_NATS_CA_FILE,
    ENV_NATS_PASSWORD,
    ENV_NATS_USER,
    NatsCredentials,
)
from spark_log.tls_config import ApiTlsConfig

TLS_DIR_NAME = "tls"
ADMIN_TOKEN_FILE_NAME = "admin.token"
CREDENTIALS_FILE_NAME = "credentials.toml"
NATS_PUBLISHER_ENV_FILE_NAME = "nats-publisher.env"
CALLOUT_SEED_FILE_NAME = "nats-callout-issuer.nk"
NATS_NODE_PASSWORD_FILE_NAME = "nats-node.password"
NATS_SYSTEM_PASSWORD_FILE_NAME = "nats-system.password"
SECRET_FILE_MODE = 0o600


@dataclass(frozen=True)
class SecureStack:
    """The TLS material and credentials of a secured stack, created by ``prepare``."""

    tls_dir: Path
    certs: StackCerts
    admin_token: str = field(repr=False)
    admin_token_file: Path
    credentials_file: Path
    callout: CalloutSecrets

    @classmethod
    def prepare(cls, data_dir: Path, broker_ids: list[int]) -> SecureStack:
        """Create (or refresh) the certificates and reuse or create the admin token."""
        tls_dir = data_dir / TLS_DIR_NAME
        certs = generate_stack_certs(tls_dir, broker_ids)
        token_file = tls_dir / ADMIN_TOKEN_FILE_NAME
        token = _existing_token(token_file) or new_token().text
        write_secret(token_file, token + "\n")
        credentials_file = data_dir / CREDENTIALS_FILE_NAME
        write_secret(credentials_file, _credentials_toml(token, certs.ca_file))
        return cls(tls_dir, certs, token, token_file, credentials_file, _callout_secrets(tls_dir))

    def node_settings(self, broker_id: int) -> dict[str, object]:
        """Node ``broker_id``'s ``[api_tls]`` (HTTPS, client certificates of the stack's CA
        accepted) and ``[auth]`` (on, the bootstrap token of ``admin``; the nodes' own
        certificate principals are super users, as Kafka's brokers are)."""
        own = self.certs.nodes[broker_id]
        node_principals = tuple(f"liftlog-node-{i}" for i in sorted(self.certs.nodes))
        return {
            "api_tls": ApiTlsConfig(
                cert_file=own.cert_file, key_file=own.key_file, ca_file=self.certs.ca_file
            ),
            "auth": AuthConfig(
                enabled=True,
                bootstrap_token_file=str(self.admin_token_file),
                super_users=(ADMIN_PRINCIPAL, *node_principals),
            ),
            "nats_auth": NatsAuthConfig(
                issuer_seed_file=str(self.tls_dir / CALLOUT_SEED_FILE_NAME),
                account=CALLOUT_ACCOUNT,
                system_user=DEFAULT_SYSTEM_USER,
                system_password=self.callout.system_password,
            ),
        }

    def nats_server_tls(self) -> NatsServerTls:
        """The NATS server's TLS: its certificate, the stack's CA; no client certificate
        demanded (users authenticate with a password)."""
        return NatsServerTls(
            self.certs.nats.cert_file, self.certs.nats.key_file, self.certs.ca_file
        )

    def secure_nats(self) -> SecureNats:
        """TLS, the nodes' and the system user's logins, and every other login a Liftlog
        token judged by the nodes. ``tls/nats-publisher.env`` logs in as ``admin`` (its
        bootstrap token as password); other principals log in with their own tokens."""
        admin = NatsCredentials(user=ADMIN_PRINCIPAL, password=self.admin_token)
        nats = callout_nats(self.nats_server_tls(), self.callout, admin)
        publisher = nats.publisher
        write_secret(
            self.publisher_env_file,
            "".join(
                f"export {name}={value}\n"
                for name, value in (
                    (ENV_NATS_USER, publisher.user),
                    (ENV_NATS_PASSWORD, publisher.password),
                    (ENV_NATS_CA_FILE, publisher.tls_ca_file),
                )
            ),
        )
        return nats

    def zookeeper_server_tls(self) -> ZkServerTls:
        """ZooKeeper's TLS: its certificate, and client certificates of the stack's CA
        required (every node presents its own)."""
        zk = self.certs.zookeeper
        return ZkServerTls(Path(zk.cert_file), Path(zk.key_file), Path(self.certs.ca_file), "need")

    @property
    def publisher_env_file(self) -> Path:
        return self.tls_dir / NATS_PUBLISHER_ENV_FILE_NAME

    def client_lines(self) -> list[tuple[str, str]]:
        """What a user needs to call the stack: printed once by ``liftlog standalone``."""
        return [
            ("admin token", self.admin_token),
            ("credentials", str(self.credentials_file)),
            ("ca", self.certs.ca_file),
            ("admin cert", f"{self.certs.admin.cert_file} (key {self.certs.admin.key_file})"),
            ("nats publisher", str(self.publisher_env_file)),
        ]


def write_secret(path: Path, text: str) -> None:
    """Create or replace ``path`` readable by its owner only from the first byte on."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, SECRET_FILE_MODE)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.chmod(path, SECRET_FILE_MODE)


def _callout_secrets(tls_dir: Path) -> CalloutSecrets:
    """The passwords and the issuer seed of NATS logins, made once and kept: clients and
    nodes that outlive a restart of the stack's NATS server log in again unchanged."""
    seed = _kept_secret(tls_dir / CALLOUT_SEED_FILE_NAME, nats_jwt.new_account_seed)
    return CalloutSecrets(
        node_password=_kept_secret(tls_dir / NATS_NODE_PASSWORD_FILE_NAME, generated_password),
        system_password=_kept_secret(tls_dir / NATS_SYSTEM_PASSWORD_FILE_NAME, generated_password),
        issuer=nats_jwt.public_key(seed),
    )


def _kept_secret(path: Path, make: Callable[[], str]) -> str:
    secret = _existing_token(path) or make()
    write_secret(path, secret + "\n")
    return secret


def _existing_token(path: Path) -> str:
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return ""


def _credentials_toml(token: str, ca_file: str) -> str:
    """spark_log.client.credentials.ClientCredentials as TOML (JSON strings are TOML strings)."""
    return f"token = {json.dumps(token)}\nca_file = {json.dumps(os.path.abspath(ca_file))}\n"
