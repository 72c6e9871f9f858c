"""ZooKeeper's secure client port: TLS for the embedded server, and the nodes' side of it.

ZooKeeper serves TLS only through its Netty connection factory. The server reads its key and
certificate from one PEM "key store" (a PKCS#8 private key followed by the certificate chain:
its PEM reader parses nothing else) and the CAs it trusts for client certificates from a PEM
"trust store". They are given as Java system properties (``-Dzookeeper.ssl.*``), the names
ZooKeeper's own ``ZKConfig`` reads. With TLS on, the server opens only ``secureClientPort``:
no plaintext port exists, so a client without TLS cannot even start a session.

The nodes' side (``node_zk_security``) adds a digest identity whose password is kept in a file
under the stack's data directory: znodes carry an ACL for that identity, so the password must
survive restarts or the cluster would lock itself out of its own znodes.
"""

from __future__ import annotations

import os
import secrets
import socket
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cryptography.hazmat.primitives import serialization

from liftlog.embedded.probes import read_reply
from spark_log.errors import ProcessStartError
from spark_log.tls_config import ZkSecurityConfig

ZkClientAuth = Literal["none", "want", "need"]
NETTY_SERVER_CNXN_FACTORY = "org.apache.zookeeper.server.NettyServerCnxnFactory"
KEYSTORE_FILE_NAME = "zookeeper-keystore.pem"
DIGEST_PASSWORD_FILE_NAME = "zookeeper-digest-password"
# the identity a standalone stack's nodes share in ZooKeeper's ACLs
DEFAULT_ZK_DIGEST_USER = "liftlog"
DIGEST_PASSWORD_BYTES = 32
SECRET_FILE_MODE = 0o600
PROBE_TIMEOUT_S = 1.0


@dataclass(frozen=True)
class ZkServerTls:
    """The server's certificate and key, the CA its clients' certificates must chain to, and
    whether a client certificate is required (``need``), checked when given (``want``), or
    not asked for (``none``).

    The readiness probe speaks to the secure port like any client: it verifies the server
    against ``ca_file`` and, since the server may require one, presents a client certificate
    (``probe_cert_file`` / ``probe_key_file``, by default the server's own, which then needs
    the clientAuth extended key usage or none at all).
    """

    cert_file: Path
    key_file: Path
    ca_file: Path
    client_auth: ZkClientAuth = "need"
    probe_cert_file: Path | None = None
    probe_key_file: Path | None = None

    def write_keystore(self, path: Path) -> Path:
        """Write the PEM key store ZooKeeper reads (readable by the owner only)."""
        key = _pkcs8_key(Path(self.key_file))
        chain = Path(self.cert_file).read_bytes()
        _write_secret(path, key + chain)
        return path

    def jvm_properties(self, keystore: Path) -> list[str]:
        """The ``-D`` options that turn the server's client port into a TLS port."""
        return [
            f"-Dzookeeper.serverCnxnFactory={NETTY_SERVER_CNXN_FACTORY}",
            f"-Dzookeeper.ssl.keyStore.location={keystore.resolve()}",
            "-Dzookeeper.ssl.keyStore.type=PEM",
            f"-Dzookeeper.ssl.trustStore.location={Path(self.ca_file).resolve()}",
            "-Dzookeeper.ssl.trustStore.type=PEM",
            f"-Dzookeeper.ssl.clientAuth={self.client_auth}",
        ]

    def quorum_jvm_properties(self, keystore: Path) -> list[str]:
        """The ``-D`` options for TLS between ensemble members (``sslQuorum=true``): the same
        key store and CA; members always present their certificate to each other."""
        return [
            f"-Dzookeeper.ssl.quorum.keyStore.location={keystore.resolve()}",
            "-Dzookeeper.ssl.quorum.keyStore.type=PEM",
            f"-Dzookeeper.ssl.quorum.trustStore.location={Path(self.ca_file).resolve()}",
            "-Dzookeeper.ssl.quorum.trustStore.type=PEM",
        ]

    def probe_context(self) -> ssl.SSLContext:
        """A client TLS context for the readiness probe."""
        context = ssl.create_default_context(cafile=str(self.ca_file))
        context.load_cert_chain(
            str(self.probe_cert_file or self.cert_file), str(self.probe_key_file or self.key_file)
        )
        return context


def tls_four_letter_word(
    host: str, port: int, word: str, context: ssl.SSLContext, timeout_s: float = PROBE_TIMEOUT_S
) -> str:
    """A four-letter command (``ruok``, ``srvr``) over TLS; '' when nothing answered."""
    try:
        raw = socket.create_connection((host, port), timeout=timeout_s)
        with raw, context.wrap_socket(raw, server_hostname=host) as sock:
            sock.sendall(word.encode("ascii"))
            return read_reply(sock)
    except OSError:  # refused, reset, timeout and ssl.SSLError alike: "not ready"
        return ""


def node_zk_security(
    secrets_dir: str | Path,
    ca_file: str | Path,
    cert_file: str | Path = "",
    key_file: str | Path = "",
    digest_user: str = DEFAULT_ZK_DIGEST_USER,
) -> ZkSecurityConfig:
    """The ``[zk_security]`` of a secured stack's nodes: TLS to the secure port, a client
    certificate when given, and the digest identity ``digest_user`` whose random password is
    created once in ``secrets_dir`` and reused on every later start."""
    password_file = Path(secrets_dir) / DIGEST_PASSWORD_FILE_NAME
    if not password_file.exists():
        _write_secret(password_file, secrets.token_urlsafe(DIGEST_PASSWORD_BYTES).encode())
    return ZkSecurityConfig(
        ca_file=str(ca_file),
        cert_file=str(cert_file),
        key_file=str(key_file),
        digest_user=digest_user,
        digest_password_file=str(password_file.resolve()),
    )


def _pkcs8_key(key_file: Path) -> bytes:
    """The key as unencrypted PKCS#8 PEM (ZooKeeper rejects PKCS#1 and SEC1 keys)."""
    try:
        key = serialization.load_pem_private_key(key_file.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise ProcessStartError(f"cannot read the ZooKeeper TLS key {key_file}: {exc}") from exc
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write_secret(path: Path, data: bytes) -> None:
    """Create or replace ``path`` with owner-only permissions from the first byte on."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, SECRET_FILE_MODE)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.chmod(path, SECRET_FILE_MODE)
