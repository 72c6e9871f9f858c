"""Readiness probes: tiny network checks that answer True/False and never raise.

A probe that raised for "not yet" would abort ``ChildProcess.wait_ready`` on the first poll,
so every expected failure (refused, reset, timeout, HTTP error) is a plain False.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import urllib.error
import urllib.request

PROBE_TIMEOUT_S = 1.0
FOUR_LETTER_WORD_MAX_BYTES = 64 * 1024


def tcp_accepts(host: str, port: int, timeout_s: float = PROBE_TIMEOUT_S) -> bool:
    """True when something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def http_status(
    url: str, timeout_s: float = PROBE_TIMEOUT_S, context: ssl.SSLContext | None = None
) -> int | None:
    """The HTTP status of a GET, or None when nothing answered (a failed TLS handshake
    included); ``context`` verifies an ``https://`` server (the system store when None)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s, context=context) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (urllib.error.URLError, OSError, http.client.HTTPException):
        # HTTPException: something that is not an HTTP server answered (BadStatusLine), e.g.
        # another server that took the port first; the component's own start then fails.
        return None


def http_ok(
    url: str, timeout_s: float = PROBE_TIMEOUT_S, context: ssl.SSLContext | None = None
) -> bool:
    """True when a GET answers 200."""
    return http_status(url, timeout_s, context) == 200


def tls_client_context(ca_file: str, cert_file: str = "", key_file: str = "") -> ssl.SSLContext:
    """A client context trusting ``ca_file`` and presenting ``cert_file`` when given (for a
    server that demands a client certificate)."""
    context = ssl.create_default_context(cafile=ca_file or None)
    if cert_file:
        context.load_cert_chain(cert_file, key_file)
    return context


def four_letter_word(host: str, port: int, word: str, timeout_s: float = PROBE_TIMEOUT_S) -> str:
    """Send a ZooKeeper four-letter command (``ruok``, ``srvr``); '' when nothing answered."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.sendall(word.encode("ascii"))
            sock.shutdown(socket.SHUT_WR)
            return read_reply(sock)
    except OSError:
        return ""


def read_reply(sock: socket.socket) -> str:
    """What the server sends until it closes (bounded): a four-letter command's answer, over
    a plain or a TLS socket alike."""
    chunks: list[bytes] = []
    size = 0
    while size < FOUR_LETTER_WORD_MAX_BYTES:
        chunk = sock.recv(4096)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks).decode("utf-8", errors="replace")
