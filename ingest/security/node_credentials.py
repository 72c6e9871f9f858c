"""What a node presents when it calls another node's REST API.

A call made on behalf of a REST caller (a flush, an election or a describe forwarded to the
partition's leader or the controller) carries the caller's own bearer token, so the other
node judges the caller and not the node. A call the node makes by itself (its controlled
shutdown), or for a caller who came with a client certificate, uses the node's credentials:
the bootstrap token (principal ``admin``) when configured, and the node's ``api_tls``
certificate as a client certificate, trusting ``api_tls.ca_file``.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools

from ingest.security.node_auth import bootstrap_token
from spark_log.auth_config import AuthConfig
from spark_log.client.credentials import ClientCredentials
from spark_log.config import NodeConfig
from spark_log.tls_config import ApiTlsConfig

# The bearer token of the REST request being served (empty: none); set by the auth
# dependency, read by the calls made while serving it (asyncio and to_thread copy contexts).
caller_token: contextvars.ContextVar[str] = contextvars.ContextVar("caller_token", default="")


def node_credentials(config: NodeConfig) -> ClientCredentials:
    """The node's own credentials (see the module docstring)."""
    return _own_credentials(config.auth, config.api_tls)


def prepare_node_credentials(config: NodeConfig) -> None:
    """Read the bootstrap token file and build the client TLS context once, at node start
    (off the event loop): forwarded calls then find both cached instead of reading files on
    the loop, and a missing file fails the start rather than a later call."""
    node_credentials(config).ssl_context()


@functools.lru_cache(maxsize=8)
def _own_credentials(auth: AuthConfig, tls: ApiTlsConfig) -> ClientCredentials:
    """Cached per config: the bootstrap file is read once, not on every forwarded call."""
    with_cert = bool(tls.cert_file and tls.key_file)
    return ClientCredentials(
        token=bootstrap_token(auth),
        ca_file=tls.ca_file,
        cert_file=tls.cert_file if with_cert else "",
        key_file=tls.key_file if with_cert else "",
    )


def outgoing_credentials(config: NodeConfig) -> ClientCredentials:
    """The caller's token when serving a request that sent one, else the node's token; the
    node's TLS material either way (the other node is reached over the same HTTPS)."""
    own = node_credentials(config)
    token = caller_token.get()
    return dataclasses.replace(own, token=token) if token else own
