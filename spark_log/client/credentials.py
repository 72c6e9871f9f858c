"""What a client (the Python client, the CLI, the Spark source and sink) presents to a node:
a bearer token and/or TLS material (a CA to trust, a client certificate for mTLS), and which
nodes to call when the caller names none.

Each value comes from, in order: an explicit argument or option, an environment variable, a
credentials file (TOML; ``LIFTLOG_CREDENTIALS_FILE`` or an explicit path). Secrets are kept out
of ``repr`` so a credential never reaches a log line or a Spark plan string.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from spark_log.client.credentials_file import ENV_CREDENTIALS_FILE as ENV_CREDENTIALS_FILE
from spark_log.client.credentials_file import read_credentials_file
from spark_log.errors import ConfigError

ENV_TOKEN = "LIFTLOG_TOKEN"
ENV_CA_FILE = "LIFTLOG_CA_FILE"
ENV_CERT_FILE = "LIFTLOG_CERT_FILE"
ENV_KEY_FILE = "LIFTLOG_KEY_FILE"
ENV_SERVER = "LIFTLOG_SERVER"
ENV_NAMES = {
    "server": ENV_SERVER,
    "token": ENV_TOKEN,
    "ca_file": ENV_CA_FILE,
    "cert_file": ENV_CERT_FILE,
    "key_file": ENV_KEY_FILE,
}


@dataclass(frozen=True)
class ClientCredentials:
    """A bearer token (sent as ``Authorization: Bearer``), a CA file to verify ``https://``
    nodes against (the system store when empty), and a client certificate and key (mTLS);
    ``server``: the nodes' REST URLs (comma-separated) a client calls when given none."""

    server: str = ""
    token: str = field(default="", repr=False)
    ca_file: str = ""
    cert_file: str = ""
    key_file: str = ""

    def __post_init__(self) -> None:
        if bool(self.cert_file) != bool(self.key_file):
            raise ConfigError("cert_file and key_file must be given together")

    def headers(self) -> dict[str, str]:
        """The HTTP headers that carry the token (none without one)."""
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def ssl_context(self) -> ssl.SSLContext | None:
        """A client TLS context for ``https://`` nodes, or None to use urllib's default.

        Built once per (CA, certificate, key) files in a process: a node makes a client for
        every call it forwards, often on its event loop, where reading and parsing PEM files
        each time would stall every request. A changed file is read by a new process."""
        if not (self.ca_file or self.cert_file):
            return None
        return _client_context(self.ca_file, self.cert_file, self.key_file)

    @classmethod
    def resolve(
        cls,
        given: Mapping[str, str | None] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        credentials_file: str | None = None,
    ) -> ClientCredentials:
        """Explicit values first, then ``LIFTLOG_*`` environment variables, then the
        credentials file (``credentials_file`` or ``LIFTLOG_CREDENTIALS_FILE``)."""
        environ = os.environ if env is None else env
        path = credentials_file or environ.get(ENV_CREDENTIALS_FILE, "")
        from_file = load_credentials_file(path) if path else cls()
        values = {}
        for f in fields(cls):
            explicit = (given or {}).get(f.name)
            values[f.name] = (
                explicit or environ.get(ENV_NAMES[f.name], "") or getattr(from_file, f.name)
            )
        return cls(**values)


@functools.lru_cache(maxsize=32)
def _client_context(ca_file: str, cert_file: str, key_file: str) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=ca_file or None)
    if cert_file:
        context.load_cert_chain(cert_file, key_file)
    return context


def load_credentials_file(path: str) -> ClientCredentials:
    """The client credentials of a credentials file (``spark_log.client.credentials_file``:
    ``server``, ``token``, ``ca_file``, ``cert_file``, ``key_file``, any subset)."""
    found = read_credentials_file(path)
    return ClientCredentials(**{f.name: getattr(found, f.name) for f in fields(ClientCredentials)})


def rest_credentials(
    token: str | None = None, credentials: ClientCredentials | None = None
) -> ClientCredentials:
    """What a client built with ``token=`` and/or ``credentials=`` presents: ``credentials``
    with ``token`` put in when both are given; with neither, ``resolve()`` (environment, then
    the credentials file)."""
    if credentials is None:
        return ClientCredentials.resolve({"token": token})
    return dataclasses.replace(credentials, token=token) if token else credentials
