"""The ``nats.connect`` keyword arguments for a set of NATS credentials.

Shared by the node (``ingest.nats_connect``), the Python client and the CLI, so every
connection to NATS authenticates and verifies TLS the same way. File problems (a missing CA,
a key that does not match its certificate) surface as ConfigError naming the setting.
"""

from __future__ import annotations

import ssl
from typing import TypedDict

from spark_log.errors import ConfigError
from spark_log.nats_config import NatsCredentials


class NatsAuthOptions(TypedDict, total=False):
    """The ``nats.connect`` keywords for authentication and TLS: at most one way of
    authenticating (user and password, token, NKey seed file or credentials file) and the TLS
    context with the host name to verify."""

    user: str
    password: str
    token: str
    nkeys_seed: str
    user_credentials: str
    tls: ssl.SSLContext
    tls_hostname: str


def nats_auth_options(credentials: NatsCredentials) -> NatsAuthOptions:
    """Authentication plus TLS options (empty for anonymous, plain connections)."""
    return {**credential_options(credentials), **tls_options(credentials)}


def credential_options(credentials: NatsCredentials) -> NatsAuthOptions:
    """The nats-py options for the one way of authenticating (none when nothing is set)."""
    if credentials.user:
        return {"user": credentials.user, "password": credentials.password}
    if credentials.token:
        return {"token": credentials.token}
    if credentials.nkey_seed_file:
        return {"nkeys_seed": credentials.nkey_seed_file}
    if credentials.creds_file:
        return {"user_credentials": credentials.creds_file}
    return {}


def tls_options(credentials: NatsCredentials) -> NatsAuthOptions:
    """``tls`` (an SSLContext) and ``tls_hostname`` when TLS is configured."""
    if not credentials.uses_tls:
        return {}
    options: NatsAuthOptions = {"tls": nats_ssl_context(credentials)}
    if credentials.tls_hostname:
        options["tls_hostname"] = credentials.tls_hostname
    return options


def nats_ssl_context(credentials: NatsCredentials) -> ssl.SSLContext:
    """A client context that verifies the server (against ``tls_ca_file``, else the system
    store) and presents the client certificate when one is configured."""
    try:
        context = ssl.create_default_context(cafile=credentials.tls_ca_file or None)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"nats.tls_ca_file {credentials.tls_ca_file!r}: {exc}") from None
    if credentials.tls_cert_file:
        try:
            context.load_cert_chain(credentials.tls_cert_file, credentials.tls_key_file)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(
                f"nats.tls_cert_file/tls_key_file {credentials.tls_cert_file!r}: {exc}"
            ) from None
    return context
