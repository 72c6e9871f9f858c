"""TLS in front of the gRPC server, for client certificates that are verified when presented.

grpc's Python server either demands a client certificate or never asks for one; it cannot ask
and still accept a connection without one, which is what the REST API does with
``api_tls.ca_file`` set and ``require_client_cert`` false (tokens work without a certificate,
a certificate of the CA works without a token). So with a CA the node terminates TLS itself
(the ``ssl`` module: the CA verifies any certificate presented, ALPN ``h2``) and relays each
connection to the gRPC server's Unix socket in a private directory. Every relayed connection
binds a socket name of its own, which gRPC reports as the call's peer: the servicer finds by
it the principal of the certificate that connection presented (``certificate_principal``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import shutil
import socket
import ssl
import tempfile
from pathlib import Path
from typing import cast

from ingest.api.client_cert import subject_principal
from spark_log.tls_config import ApiTlsConfig

log = logging.getLogger("liftlog.liftbridge")

ALPN_HTTP2 = "h2"
UNIX_PEER_PREFIX = "unix:"
BACKEND_SOCKET_NAME = "grpc.sock"
SOCKET_BASE_DIR = "/tmp"
"""Where the private socket directory goes: a Unix socket's path is limited to 107 bytes, and
``$TMPDIR`` may be deep (test runners set one per test)."""

_principals: dict[str, str] = {}
"""gRPC peer (``unix:<relay socket>``) -> the CN of the certificate its connection presented.
Process-wide: relay socket names are unique (each front has its own private directory)."""


def certificate_principal(peer: str) -> str | None:
    """The principal of the verified client certificate behind a call's peer, or None (no
    certificate, or one whose subject names no single valid principal)."""
    return _principals.get(peer)


def front_ssl_context(tls: ApiTlsConfig) -> ssl.SSLContext:
    """The node's certificate; a client certificate verified against the CA if presented
    (required with ``require_client_cert``); HTTP/2 negotiated as gRPC clients insist."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=tls.ca_file)
    context.load_cert_chain(tls.cert_file, tls.key_file)
    context.verify_mode = ssl.CERT_REQUIRED if tls.require_client_cert else ssl.CERT_OPTIONAL
    context.set_alpn_protocols([ALPN_HTTP2])
    return context


class _Relay(asyncio.Protocol):
    """One side of a relayed connection: what it reads the other side writes, and a full
    write buffer on one side pauses reading on the other (no unbounded buffering)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.other: _Relay | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream transport; uvloop's (the node's loop) do not derive from asyncio's classes
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        if self.other is not None and self.other.transport is not None:
            self.other.transport.write(data)

    def pause_writing(self) -> None:
        if self.other is not None and self.other.transport is not None:
            self.other.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.other is not None and self.other.transport is not None:
            self.other.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.other is not None and self.other.transport is not None:
            self.other.transport.close()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


class _ClientSide(_Relay):
    """The TLS connection of a client: held paused until its relay to gRPC is connected
    and its certificate's principal registered under the relay's socket name."""

    def __init__(self, front: TlsFront) -> None:
        super().__init__()
        self._front = front
        self._peer = ""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        if self.transport is None:
            return
        self.transport.pause_reading()
        self._front.opened(self)

    async def link(self) -> None:
        """Connect this client to the gRPC server, then let its bytes flow."""
        if self.transport is None:
            return
        principal = _transport_principal(self.transport)
        try:
            backend, self._peer = await self._front.connect_backend()
        except OSError as exc:
            log.warning("the Liftbridge API cannot relay a TLS connection: %s", exc)
            self.transport.close()
            return
        if self.transport.is_closing():
            backend.close()
            return
        if principal is not None:
            _principals[self._peer] = principal
        relay = _Relay()
        relay.other, self.other = self, relay
        try:
            await asyncio.get_running_loop().create_connection(lambda: relay, sock=backend)
        except OSError as exc:
            log.warning("the Liftbridge API cannot relay a TLS connection: %s", exc)
            backend.close()
            self.transport.close()
            return
        if self.transport.is_closing():  # the client left while the relay was connecting
            relay.close()
            return
        self.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        _principals.pop(self._peer, None)
        self._front.closed(self)
        super().connection_lost(exc)


def _transport_principal(transport: asyncio.Transport) -> str | None:
    """The CN of the certificate the handshake verified (the ``ssl`` module parses only
    verified certificates), by the REST API's rule."""
    cert = transport.get_extra_info("peercert") or {}
    return subject_principal(tuple(cert.get("subject", ())))


class TlsFront:
    """Listens with TLS on the node's gRPC address; ``backend_address`` is what the gRPC
    server listens on instead (a Unix socket only this process's user can reach)."""

    def __init__(self, tls: ApiTlsConfig) -> None:
        self._context = front_ssl_context(tls)
        self._dir = Path(tempfile.mkdtemp(prefix="liftlog-grpc-", dir=SOCKET_BASE_DIR))  # 0700
        self._backend = self._dir / BACKEND_SOCKET_NAME
        self._names = itertools.count()
        self._server: asyncio.Server | None = None
        self._clients: set[_ClientSide] = set()
        self._links: set[asyncio.Task[None]] = set()

    @property
    def backend_address(self) -> str:
        return f"{UNIX_PEER_PREFIX}{self._backend}"

    async def start(self, host: str, port: int) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _ClientSide(self), host, port, ssl=self._context, reuse_address=True
        )

    def stop_accepting(self) -> None:
        if self._server is not None:
            self._server.close()

    async def stop(self) -> None:
        """Close the listener and every relayed connection, and remove the socket files."""
        self.stop_accepting()
        for client in list(self._clients):
            client.close()
        for task in list(self._links):
            task.cancel()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
        shutil.rmtree(self._dir, ignore_errors=True)

    def opened(self, client: _ClientSide) -> None:
        self._clients.add(client)
        task = asyncio.get_running_loop().create_task(client.link())
        self._links.add(task)
        task.add_done_callback(self._links.discard)

    def closed(self, client: _ClientSide) -> None:
        self._clients.discard(client)

    async def connect_backend(self) -> tuple[socket.socket, str]:
        """A socket connected to the gRPC server, bound to a fresh name (its gRPC peer)."""
        name = self._dir / f"c-{next(self._names)}"
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(name))
            sock.setblocking(False)
            await asyncio.get_running_loop().sock_connect(sock, str(self._backend))
        except OSError:
            sock.close()
            raise
        finally:
            _unlink(name)  # the name stays the peer's; the file is not needed once connected
        return sock, f"{UNIX_PEER_PREFIX}{name}"


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
