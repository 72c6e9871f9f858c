"""The ASGI TLS extension (``scope["extensions"]["tls"]``) for uvicorn's HTTP/1.1 protocol.

uvicorn verifies client certificates (``ssl_cert_reqs``) but does not tell the application
which certificate a connection presented, so mTLS could refuse strangers but not name the
caller. This protocol subclass reads the verified peer certificate once per connection,
right after the handshake, and add it to every request's scope as the ASGI TLS extension
(https://asgi.readthedocs.io/en/latest/specs/tls.html) with one addition:
``client_cert_subject``, the subject as the ``ssl`` module parsed it from the verified
certificate, so that reading the CN needs no X.509 parser. Plain HTTP connections get no
``tls`` entry, as the specification requires.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import TypedDict, cast

from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

TLS_EXTENSION = "tls"
# ASGI TLS extension: tls_version is the protocol's wire number
TLS_VERSION_NUMBERS = {"TLSv1.2": 0x0303, "TLSv1.3": 0x0304}

Subject = tuple[tuple[tuple[str, str], ...], ...]


class TlsExtension(TypedDict):
    """``scope["extensions"]["tls"]``: the ASGI TLS extension's fields, plus
    ``client_cert_subject``."""

    server_cert: str | None
    client_cert_chain: list[str]
    client_cert_name: str | None
    client_cert_error: str | None
    client_cert_subject: Subject
    tls_version: int | None
    cipher_suite: int | None


def tls_extension(transport: asyncio.BaseTransport) -> TlsExtension | None:
    """The ``tls`` extension of a connection, or None when it is not TLS."""
    ssl_object = transport.get_extra_info("ssl_object")
    if not isinstance(ssl_object, ssl.SSLObject | ssl.SSLSocket):
        return None
    der = ssl_object.getpeercert(binary_form=True)
    # the parsed form is only given for a certificate the handshake verified
    parsed = ssl_object.getpeercert() or {}
    subject = cast(Subject, tuple(parsed.get("subject", ())))
    return {
        "server_cert": None,  # the ssl module cannot read back the server's own certificate
        "client_cert_chain": [ssl.DER_cert_to_PEM_cert(der)] if der else [],
        "client_cert_name": _rfc4514(subject) if subject else None,
        "client_cert_error": None,  # a failed verification aborts the handshake instead
        "client_cert_subject": subject,
        "tls_version": TLS_VERSION_NUMBERS.get(ssl_object.version() or ""),
        "cipher_suite": None,
    }


def _rfc4514(subject: Subject) -> str:
    """The subject as an RFC 4514 string (most specific RDN first), for logs and display."""
    short = {"commonName": "CN", "organizationName": "O", "countryName": "C"}
    rdns = ["+".join(f"{short.get(k, k)}={_escape(v)}" for k, v in rdn) for rdn in subject]
    return ",".join(reversed(rdns))


def _escape(value: str) -> str:
    escaped = "".join(f"\\{c}" if c in ',+"\\<>;=' else c for c in value)
    if escaped.startswith((" ", "#")):
        escaped = "\\" + escaped
    return escaped[:-1] + "\\ " if escaped.endswith(" ") else escaped


class _TlsScopeMixin:
    """Wraps the protocol's ASGI app, per connection, in one that adds the TLS extension."""

    app: ASGIApp

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a mixin: connection_made comes from the protocol class it is mixed into, which
        # the type checker cannot see here
        super().connection_made(transport)  # type: ignore[misc]
        extension = tls_extension(transport)
        if extension is None:
            return
        inner = self.app

        async def app_with_tls(scope: Scope, receive: Receive, send: Send) -> None:
            extensions = {**(scope.get("extensions") or {}), TLS_EXTENSION: extension}
            await inner({**scope, "extensions": extensions}, receive, send)

        self.app = app_with_tls


class HttpToolsTlsProtocol(_TlsScopeMixin, HttpToolsProtocol):
    """uvicorn's httptools protocol (its ``http="auto"`` choice with ``uvicorn[standard]``)
    with the TLS extension."""
