"""Telling a user who dialled ``http://`` that the node speaks HTTPS.

A node with ``[api_tls]`` has no plaintext port: a plain HTTP request reaches the TLS
listener, which drops it, and the client sees only "Remote end closed connection without
response". When that happens on an ``http://`` URL, one TLS handshake with the same port
(nothing verified, nothing sent) tells whether the URL only has the wrong scheme.
"""

from __future__ import annotations

import socket
import ssl
from urllib.parse import urlsplit

HINT_PROBE_TIMEOUT_S = 2.0


def https_hint(base: str, timeout_s: float = HINT_PROBE_TIMEOUT_S) -> str | None:
    """The hint "<base> serves HTTPS: use https://..." when ``base`` is an ``http://`` URL whose
    port completes a TLS handshake, else None."""
    parts = urlsplit(base)
    if parts.scheme != "http" or not parts.hostname or parts.port is None:
        return None
    if not _speaks_tls(parts.hostname, parts.port, timeout_s):
        return None
    https = parts._replace(scheme="https").geturl()
    return f"{base} serves HTTPS, not plain HTTP: use {https}"


def _speaks_tls(host: str, port: int, timeout_s: float) -> bool:
    """Whether a TLS handshake with ``host:port`` gets a server's answer (a completed
    handshake, or an alert such as "certificate required": both come from a TLS server)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # a probe: whose certificate it is does not matter
    try:
        with (
            socket.create_connection((host, port), timeout=timeout_s) as raw,
            context.wrap_socket(raw, server_hostname=host),
        ):
            return True
    except ssl.SSLError as exc:
        return "alert" in str(exc).lower()
    except OSError:
        return False
