"""How a client logs in to NATS: its ``LIFTLOG_NATS_*`` settings, or else its Liftlog token.

A cluster whose nodes answer the NATS auth callout takes a principal's bearer token as its
NATS credential, so a client holding a token (explicitly, ``LIFTLOG_TOKEN`` or the
credentials file) needs nothing more: the token logs in, and the CA that verifies the nodes'
HTTPS verifies the NATS server too. Explicit NATS settings always win. A NATS server without
authentication ignores the token, and TLS is used only when the server asks for it.
"""

from __future__ import annotations

import dataclasses

from spark_log.client.credentials import ClientCredentials
from spark_log.nats_config import AUTH_KINDS, NatsCredentials, nats_credentials_from_env


def nats_login(explicit: NatsCredentials | None, rest: ClientCredentials) -> NatsCredentials:
    """``explicit``, else ``LIFTLOG_NATS_*``, completed from the REST credentials."""
    nats = explicit if explicit is not None else nats_credentials_from_env()
    if rest.token and not any(getattr(nats, kind) for kind in AUTH_KINDS):
        nats = dataclasses.replace(nats, token=rest.token)
    if rest.ca_file and not nats.tls_ca_file:
        nats = dataclasses.replace(nats, tls_ca_file=rest.ca_file)
    return nats
