"""The principal of a request made with a verified client certificate (mTLS).

A certificate names its principal by its subject CN (``liftlog-node-1``, ``alice``). Only a
certificate the TLS handshake verified against the node's ``api_tls.ca_file`` reaches the
request's scope (ingest/api/tls_extension.py), so the CN can be trusted as an identity.
"""

from __future__ import annotations

from starlette.requests import Request

from ingest.api.tls_extension import TLS_EXTENSION, Subject
from spark_log.auth.tokens import check_principal
from spark_log.errors import InvalidRequestError

COMMON_NAME = "commonName"


def client_cert_principal(request: Request) -> str | None:
    """The verified client certificate's subject CN, or None: a plain HTTP connection, no
    client certificate, a subject without exactly one CN (an ambiguous name is no
    identity), or a CN that is no valid principal name (``*``, spaces): the same rule as
    token principals, so a certificate cannot claim a name an ACL reads as a wildcard."""
    tls = (request.scope.get("extensions") or {}).get(TLS_EXTENSION)
    if not tls:
        return None
    return subject_principal(tls.get("client_cert_subject") or ())


def subject_principal(subject: Subject) -> str | None:
    """The principal a verified certificate's subject (as the ``ssl`` module parses it)
    names: its one CN when that is a valid principal name, else None."""
    names = [value for rdn in subject for key, value in rdn if key == COMMON_NAME]
    if len(names) != 1:
        return None
    name = str(names[0])
    try:
        check_principal(name)
    except InvalidRequestError:
        return None
    return name
