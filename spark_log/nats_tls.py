"""A nats-py connection whose TLS upgrade is complete: what the Liftlog clients connect with.

nats-py upgrades a connection to TLS with ``loop.start_tls`` and a new stream protocol, but
never tells that protocol it is connected, so asyncio's stream does not know it runs over TLS:
it answers the server's end of stream as a plain socket would, and asyncio prints "returning
true from eof_received() has no effect when using ssl" at every close. A handshake that fails
(a certificate the client does not trust) leaves the plain stream waiting for a close that
never comes, which hung the connection attempt for minutes. ``TlsCompleteTransport`` does
both steps nats-py leaves out; ``NatsConnection`` is nats-py's client using it.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from urllib.parse import ParseResult

import nats.aio.client as nats_client
from nats.aio.client import Client, Srv
from nats.aio.transport import TcpTransport

PLAIN_SCHEMES = ("nats", "tls")
"""URL schemes nats-py reaches over TCP (the websocket ones keep nats-py's own transport)."""


class TlsCompleteTransport(TcpTransport):
    """nats-py's TCP transport, with the TLS upgrade announced to the new stream protocol
    and a failed upgrade leaving nothing to wait for (``start_tls`` closed the socket)."""

    async def connect_tls(
        self,
        uri: str | ParseResult,
        ssl_context: ssl.SSLContext,
        buffer_size: int,
        connect_timeout: int,
    ) -> None:
        if self._io_writer is None:
            raise ConnectionError("the NATS connection was not opened before its TLS upgrade")
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=buffer_size)
        protocol = asyncio.StreamReaderProtocol(reader)
        upgrade = loop.start_tls(
            self._io_writer.transport,
            protocol,
            ssl_context,
            server_hostname=uri if isinstance(uri, str) else uri.hostname,
        )
        try:
            transport = await asyncio.wait_for(upgrade, connect_timeout)
        except BaseException:
            self._io_reader = self._io_writer = None  # the socket is closed already
            raise
        if transport is None:  # start_tls returns None only for a transport already closed
            self._io_reader = self._io_writer = None
            raise ConnectionError("the NATS connection closed during its TLS upgrade")
        protocol.connection_made(transport)  # the stream now knows it runs over TLS
        self._io_reader = reader
        self._io_writer = asyncio.StreamWriter(transport, protocol, reader, loop)


class NatsConnection(Client):
    """nats-py's client over ``TlsCompleteTransport``."""

    async def _connect_to_server(self, s: Srv) -> None:
        """nats-py's own, over ``TlsCompleteTransport`` (a transport not yet connected is
        falsy, so it cannot be handed to nats-py's version to use)."""
        if s.uri.scheme not in PLAIN_SCHEMES:
            await super()._connect_to_server(s)
            return
        s.last_attempt = time.monotonic()
        if not self._transport:
            self._transport = TlsCompleteTransport()  # type: ignore[no-untyped-call]
        await self._transport.connect(
            s.uri,
            buffer_size=nats_client.DEFAULT_BUFFER_SIZE,  # read now: nats_io may widen it
            connect_timeout=self.options["connect_timeout"],
        )

    def abandon(self) -> None:
        """Close the socket of a connection attempt given up on (nats-py leaves it open)."""
        if self._transport:
            self._transport.close()  # type: ignore[no-untyped-call]
