"""TLS for the REST server and TLS plus ACLs for ZooKeeper (docs/security.md)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from spark_log.errors import ConfigError


@dataclass(frozen=True)
class ApiTlsConfig:
    """``[api_tls]``: serve the REST API over HTTPS when ``cert_file`` and ``key_file`` are
    set; with ``ca_file``, client certificates signed by that CA are accepted (mTLS) and their
    subject names the principal; ``require_client_cert`` refuses connections without one."""

    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    require_client_cert: bool = False

    def __post_init__(self) -> None:
        if bool(self.cert_file) != bool(self.key_file):
            raise ConfigError("api_tls.cert_file and api_tls.key_file must be set together")
        if (self.ca_file or self.require_client_cert) and not self.cert_file:
            raise ConfigError("api_tls.ca_file and require_client_cert need cert_file/key_file")
        if self.require_client_cert and not self.ca_file:
            raise ConfigError("api_tls.require_client_cert needs api_tls.ca_file")
        for name in ("cert_file", "key_file", "ca_file"):
            path = getattr(self, name)
            if path and not os.path.isfile(path):
                raise ConfigError(f"api_tls.{name}: no such file {path!r}")

    @property
    def enabled(self) -> bool:
        """True when the REST API is served over HTTPS."""
        return bool(self.cert_file)

    @property
    def scheme(self) -> str:
        """``https`` with TLS, ``http`` without: the scheme of the node's API URLs."""
        return "https" if self.enabled else "http"


@dataclass(frozen=True)
class ZkSecurityConfig:
    """``[zk_security]``: connect to ZooKeeper's secure client port with TLS (``ca_file``, and
    a client certificate when the server asks for one), and protect the cluster's znodes with
    a digest ACL (``digest_user`` / ``digest_password`` or ``digest_password_file``).

    TLS is on when ``ca_file`` is set (the server's certificate must chain to it and name the
    host of the connect string). ACLs are on when ``digest_user`` is set: every znode the
    cluster creates is then readable and writable by that identity only.
    """

    ca_file: str = ""
    cert_file: str = ""
    key_file: str = ""
    digest_user: str = ""
    digest_password: str = field(default="", repr=False)
    digest_password_file: str = ""

    def __post_init__(self) -> None:
        if bool(self.cert_file) != bool(self.key_file):
            raise ConfigError("zk_security.cert_file and zk_security.key_file go together")
        if self.cert_file and not self.ca_file:
            raise ConfigError("zk_security.cert_file needs zk_security.ca_file (TLS)")
        if ":" in self.digest_user:
            raise ConfigError("zk_security.digest_user must not contain ':'")
        if self.digest_password and self.digest_password_file:
            raise ConfigError("zk_security: set digest_password or digest_password_file, not both")
        has_password = bool(self.digest_password or self.digest_password_file)
        if bool(self.digest_user) != has_password:
            raise ConfigError("zk_security.digest_user and its password go together")

    @property
    def tls(self) -> bool:
        """Connect to ZooKeeper's secure client port."""
        return bool(self.ca_file)

    @property
    def acl(self) -> bool:
        """Protect the cluster's znodes with a digest ACL."""
        return bool(self.digest_user)

    def password(self) -> str:
        """The digest password, read from ``digest_password_file`` when that is set (one
        trailing newline dropped)."""
        if not self.digest_password_file:
            return self.digest_password
        try:
            text = Path(self.digest_password_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"zk_security.digest_password_file {self.digest_password_file}: {exc.strerror}"
            ) from exc
        password = text.removesuffix("\n")
        if not password:
            raise ConfigError(
                f"zk_security.digest_password_file {self.digest_password_file} is empty"
            )
        return password
