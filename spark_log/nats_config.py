"""How a node (or a client) authenticates to NATS: the ``[nats]`` table of a node config.

One way of proving who it is (user/password, a token, an NKey seed file or a ``.creds`` file)
and, independently, TLS: the CA that signs the server's certificate and, for servers that
verify clients (mTLS), a client certificate and key. Clients read the same settings from
``LIFTLOG_NATS_*`` environment variables (``nats_credentials_from_env``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from spark_log.errors import ConfigError

ENV_NATS_USER = "LIFTLOG_NATS_USER"
ENV_NATS_PASSWORD = "LIFTLOG_NATS_PASSWORD"
ENV_NATS_TOKEN = "LIFTLOG_NATS_TOKEN"
ENV_NATS_NKEY_SEED = "LIFTLOG_NATS_NKEY_SEED"
ENV_NATS_CREDS = "LIFTLOG_NATS_CREDS"
ENV_NATS_CA_FILE = "LIFTLOG_NATS_CA_FILE"
ENV_NATS_CERT_FILE = "LIFTLOG_NATS_CERT_FILE"
ENV_NATS_KEY_FILE = "LIFTLOG_NATS_KEY_FILE"

# field name -> environment variable, in the order a reader expects them
ENV_NATS_FIELDS = {
    "user": ENV_NATS_USER,
    "password": ENV_NATS_PASSWORD,
    "token": ENV_NATS_TOKEN,
    "nkey_seed_file": ENV_NATS_NKEY_SEED,
    "creds_file": ENV_NATS_CREDS,
    "tls_ca_file": ENV_NATS_CA_FILE,
    "tls_cert_file": ENV_NATS_CERT_FILE,
    "tls_key_file": ENV_NATS_KEY_FILE,
}
AUTH_KINDS = ("user", "token", "nkey_seed_file", "creds_file")


@dataclass(frozen=True)
class NatsCredentials:
    """How the node authenticates to NATS (``[nats]``).

    At most one of: ``user`` + ``password``; ``token``; ``nkey_seed_file`` (a file holding an
    NKey user seed, ``SU...``: the server knows only the public key and checks a signature of
    its nonce, so no secret crosses the wire); ``creds_file`` (a JWT + seed ``.creds`` file of
    an operator-mode server). TLS is separate: ``tls_ca_file`` verifies the server,
    ``tls_cert_file`` + ``tls_key_file`` is the client certificate a ``verify`` server asks
    for, ``tls_hostname`` the name to check the server's certificate against when it is not
    the URL's host. Secrets stay out of ``repr`` so they never reach a log line.
    """

    user: str = ""
    password: str = field(default="", repr=False)
    token: str = field(default="", repr=False)
    nkey_seed_file: str = ""
    creds_file: str = ""
    tls_ca_file: str = ""
    tls_cert_file: str = ""
    tls_key_file: str = ""
    tls_hostname: str = ""

    def __post_init__(self) -> None:
        if bool(self.user) != bool(self.password):
            raise ConfigError("nats.user and nats.password must be set together")
        kinds = [k for k in AUTH_KINDS if getattr(self, k)]
        if len(kinds) > 1:
            raise ConfigError(f"nats: set one way to authenticate, got {', '.join(kinds)}")
        if bool(self.tls_cert_file) != bool(self.tls_key_file):
            raise ConfigError("nats.tls_cert_file and nats.tls_key_file must be set together")

    @property
    def uses_tls(self) -> bool:
        """True when any TLS setting is given: the connection then verifies the server."""
        return bool(self.tls_ca_file or self.tls_cert_file or self.tls_hostname)


def nats_credentials_from_env(env: Mapping[str, str] | None = None) -> NatsCredentials:
    """The client's NATS credentials from ``LIFTLOG_NATS_*`` (none set: anonymous, no TLS)."""
    source = os.environ if env is None else env
    given = {name: source[var] for name, var in ENV_NATS_FIELDS.items() if source.get(var)}
    try:
        return NatsCredentials(**given)
    except ConfigError as exc:
        raise ConfigError(f"{exc} (from the LIFTLOG_NATS_* environment variables)") from None
