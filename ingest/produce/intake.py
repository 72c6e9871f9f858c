"""The node's NATS connection for publishes to its leaders' subjects, and for their acks.

Every record published on NATS enters here. A general client (nats-py, which the node keeps
for everything else: replication, requests, the activity stream) parses a frame, builds a
message object, queues it and runs a coroutine per message, then writes each ack through its
own flusher; at tens of thousands of messages a second that is most of a leader's CPU. This
connection parses every frame a socket read brought at once (``nats_frames``), hands each
subscription its messages as one list, and writes the acks queued during one loop turn in a
single socket write. It is plain NATS on the wire: the same server, subjects, queue groups and
credentials as any client.

Like the node's other connection it outlives NATS servers: when its server goes, it tries the
configured servers (and those the cluster announced) until one takes it, with no limit on
attempts, re-subscribes, and sends the acks it held meanwhile (up to ``held_bytes``). A server
that stops answering pings is given up after ``max_outstanding_pings`` intervals.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast
from urllib.parse import urlsplit

from ingest.produce.intake_handshake import IntakeConnectError, connect_frame
from ingest.produce.nats_frames import (
    FrameReader,
    InboundMessage,
    NatsProtocolError,
    pub_frame,
    sub_frame,
    unsub_frame,
)
from spark_log.nats_config import NatsCredentials
from spark_log.nats_options import nats_ssl_context

log = logging.getLogger(__name__)

MessagesHandler = Callable[[list[InboundMessage]], None]
"""Receives a subscription's messages of one socket read, in the order NATS sent them."""

DEFAULT_NATS_PORT = 4222


class Intake(Protocol):
    """What a partition leader needs of the intake: its subscription and its acks."""

    def subscribe(self, subject: str, queue: str, handler: MessagesHandler) -> int: ...

    def unsubscribe(self, sid: int) -> None: ...

    def publish(self, subject: str, payload: bytes) -> None: ...


@dataclass(frozen=True)
class IntakeSettings:
    """Where and how the intake connects (the node's NATS servers and credentials)."""

    servers: tuple[str, ...]
    name: str
    credentials: NatsCredentials = field(default_factory=NatsCredentials)
    connect_timeout_s: float = 10.0
    reconnect_wait_s: float = 0.5
    ping_interval_s: float = 5.0
    max_outstanding_pings: int = 3
    held_bytes: int = 64 * 1024 * 1024


@dataclass
class _Subscription:
    subject: str
    queue: str
    handler: MessagesHandler


class _Wire(asyncio.Protocol):
    """The socket's callbacks, handed to the connection that owns it."""

    def __init__(self, owner: IntakeConnection) -> None:
        self._owner = owner
        self.reader = FrameReader()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without deriving from it
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        try:
            parsed = self.reader.feed(data)
        except NatsProtocolError as exc:
            log.warning("NATS intake: %s; reconnecting", exc)
            if self.transport is not None:
                self.transport.abort()
            return
        for line in parsed.controls:
            self._owner.on_control(self, line)
        if parsed.messages:
            self._owner.on_messages(parsed.messages)

    def connection_lost(self, exc: Exception | None) -> None:
        self._owner.on_lost(self, exc)


class IntakeConnection:
    """Subscriptions delivered in batches and acks written in batches, on one NATS connection."""

    def __init__(
        self, settings: IntakeSettings, on_disconnect: Callable[[], None] = lambda: None
    ) -> None:
        """``on_disconnect`` is told of every loss of an established connection."""
        self._settings = settings
        self._on_disconnect = on_disconnect
        self._subs: dict[int, _Subscription] = {}
        self._next_sid = 1
        self._wire: _Wire | None = None
        self._ready = False  # CONNECT accepted on the current wire
        self._out: list[bytes] = []
        self._out_bytes = 0
        self._flush_scheduled = False
        self._held_drops = 0
        self._handshake: asyncio.Future[dict[str, Any]] | None = None
        # one entry per PING in flight, answered in order: a flush's future, or None
        self._pongs: deque[asyncio.Future[None] | None] = deque()
        self._outstanding_pings = 0
        self._discovered: list[str] = []
        self._closing = False
        self._reconnecting: asyncio.Task[None] | None = None
        self._pinger: asyncio.Task[None] | None = None
        self.connected_url = ""
        self.reconnects = 0

    # ----------------------------------------------------------------- lifecycle

    async def connect(self) -> None:
        """Connect to the first server of the list that accepts (IntakeConnectError if none)."""
        errors: list[str] = []
        for url in self._settings.servers:
            try:
                await self._open(url)
            except (OSError, TimeoutError, IntakeConnectError, NatsProtocolError) as exc:
                errors.append(f"{_hostport(url)}: {exc or type(exc).__name__}")
                continue
            self._pinger = asyncio.create_task(self._ping_loop(), name="nats-intake-ping")
            return
        raise IntakeConnectError("no NATS server took the intake connection: " + "; ".join(errors))

    async def close(self) -> None:
        """Send what is queued and close; nothing reconnects after this."""
        self._closing = True
        for task in (self._reconnecting, self._pinger):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._flush()
        wire, self._wire = self._wire, None
        if wire is not None and wire.transport is not None:
            wire.transport.close()

    @property
    def is_connected(self) -> bool:
        return self._ready

    async def flush(self, timeout_s: float) -> None:
        """Send what is queued and wait for the server's PONG to a PING behind it: the server
        has then applied every subscription and routed every message sent before."""
        if not self._ready:
            raise IntakeConnectError("not connected to NATS")
        pong: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._flush()
        self._ping(pong)
        async with asyncio.timeout(timeout_s):
            await pong

    # ----------------------------------------------------------------- subscriptions

    def subscribe(self, subject: str, queue: str, handler: MessagesHandler) -> int:
        """Start delivering ``subject`` (in ``queue``, if any); returns the subscription id.
        Made while disconnected, it is sent when the connection comes back."""
        sid = self._next_sid
        self._next_sid += 1
        self._subs[sid] = _Subscription(subject, queue, handler)
        if self._ready:
            self._write_now(sub_frame(subject, queue, sid))
        return sid

    def unsubscribe(self, sid: int) -> None:
        if self._subs.pop(sid, None) is not None and self._ready:
            self._write_now(unsub_frame(sid))

    def publish(self, subject: str, payload: bytes) -> None:
        """Queue a message (an ack); everything queued in one loop turn leaves in one write."""
        frame = pub_frame(subject, payload)
        if not self._ready:
            self._hold(frame)
            return
        self._write(frame)

    # ----------------------------------------------------------------- the wire's callbacks

    def on_messages(self, messages: list[InboundMessage]) -> None:
        """Hand each subscription its messages of this read, as one list."""
        first = messages[0].sid
        if all(m.sid == first for m in messages):
            by_sid = {first: messages}  # the usual read: one subscription's messages
        else:
            by_sid = {}
            for message in messages:
                by_sid.setdefault(message.sid, []).append(message)
        for sid, batch in by_sid.items():
            sub = self._subs.get(sid)
            if sub is not None:  # messages may trail an unsubscribe
                sub.handler(batch)

    def on_control(self, wire: _Wire, line: bytes) -> None:
        verb, _, rest = line.partition(b" ")
        if verb == b"PING":
            _send(wire, b"PONG\r\n")
        elif verb == b"PONG":
            self._outstanding_pings = 0
            waiter = self._pongs.popleft() if self._pongs else None
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
        elif verb == b"INFO":
            self._on_info(rest)
        elif verb == b"-ERR":
            self._on_error(rest.decode(errors="replace").strip().strip("'"))

    def on_lost(self, wire: _Wire, exc: Exception | None) -> None:
        if wire is not self._wire:
            return  # a connection already replaced
        was_ready, self._wire, self._ready = self._ready, None, False
        lost = IntakeConnectError(f"connection lost: {exc or 'closed'}")
        self._fail_handshake(lost)
        self._fail_pongs(lost)
        if self._closing or not was_ready:
            return  # closing, or a connection being set up: its attempt fails by itself
        self._on_disconnect()
        log.warning("NATS intake lost %s (%s); reconnecting", self.connected_url, exc or "closed")
        self._reconnecting = asyncio.create_task(self._reconnect(), name="nats-intake-reconnect")

    # ----------------------------------------------------------------- connecting

    async def _open(self, url: str) -> None:
        """Connect, upgrade to TLS if asked, authenticate, and re-subscribe on ``url``."""
        loop = asyncio.get_running_loop()
        host, port, tls_url = _address(url)
        settings = self._settings
        wire = _Wire(self)
        self._wire = wire
        self._handshake = loop.create_future()
        try:
            async with asyncio.timeout(settings.connect_timeout_s):
                await loop.create_connection(lambda: wire, host, port)
                info = await self._handshake
                if tls_url or info.get("tls_required") or settings.credentials.uses_tls:
                    await self._start_tls(wire, host)
                pong: asyncio.Future[None] = loop.create_future()
                self._fail_pongs(IntakeConnectError("a new connection"))
                self._pongs.append(pong)  # the CONNECT frame ends with a PING
                self._handshake = loop.create_future()  # an -ERR fails the CONNECT
                _send(wire, connect_frame(settings.credentials, info, url, settings.name))
                answers: list[asyncio.Future[Any]] = [pong, self._handshake]
                await asyncio.wait(answers, return_when="FIRST_COMPLETED")
                refused = self._handshake.exception() if self._handshake.done() else None
                if refused is not None:
                    raise refused
        except BaseException:
            self._wire = None
            if wire.transport is not None:
                wire.transport.abort()
            raise
        finally:
            self._handshake = None
        self._on_connected(wire, url)

    async def _start_tls(self, wire: _Wire, host: str) -> None:
        credentials = self._settings.credentials
        context = nats_ssl_context(credentials) if credentials.uses_tls else _default_context()
        if wire.transport is None:
            raise IntakeConnectError("the connection closed before TLS")
        try:
            transport = await asyncio.get_running_loop().start_tls(
                wire.transport, wire, context, server_hostname=credentials.tls_hostname or host
            )
        except ssl.SSLError as exc:
            raise IntakeConnectError(f"TLS: {exc}") from None
        if transport is None:
            raise IntakeConnectError("TLS: no transport after the handshake")
        wire.transport = transport

    def _on_connected(self, wire: _Wire, url: str) -> None:
        self._ready = True
        self._outstanding_pings = 0
        self.connected_url = _hostport(url)
        frames = [sub_frame(s.subject, s.queue, sid) for sid, s in self._subs.items()]
        held, self._out, self._out_bytes = self._out, [], 0
        _send(wire, b"".join(frames + held))
        if self._held_drops:
            log.warning("NATS intake dropped %d acks while disconnected", self._held_drops)
            self._held_drops = 0

    async def _reconnect(self) -> None:
        wait = self._settings.reconnect_wait_s
        while not self._closing:
            for url in self._candidates():
                try:
                    await self._open(url)
                except (OSError, TimeoutError, IntakeConnectError, NatsProtocolError) as exc:
                    log.debug("NATS intake: %s: %s", _hostport(url), exc)
                    continue
                self.reconnects += 1
                log.info("NATS intake reconnected to %s; subscriptions restored", url)
                return
            await asyncio.sleep(wait)

    def _candidates(self) -> list[str]:
        """The configured servers in order, then those the cluster announced."""
        known = list(self._settings.servers)
        seen = {_hostport(u) for u in known}
        return known + [u for u in self._discovered if _hostport(u) not in seen]

    def _on_info(self, raw: bytes) -> None:
        try:
            info = json.loads(raw)
        except ValueError:
            log.warning("NATS intake: an INFO that is not JSON")
            return
        if not isinstance(info, dict):
            return
        urls = info.get("connect_urls") or []
        scheme = "tls" if info.get("tls_required") else "nats"
        self._discovered = [f"{scheme}://{u}" for u in urls if isinstance(u, str)]
        if self._handshake is not None and not self._handshake.done():
            self._handshake.set_result(info)

    def _on_error(self, message: str) -> None:
        if self._handshake is not None and not self._handshake.done():
            self._fail_handshake(IntakeConnectError(message))
            return
        log.warning("NATS intake: server error: %s", message)

    def _fail_pongs(self, exc: IntakeConnectError) -> None:
        pongs, self._pongs = self._pongs, deque()
        for waiter in pongs:
            if waiter is not None and not waiter.done():
                waiter.set_exception(exc)

    def _ping(self, waiter: asyncio.Future[None] | None) -> None:
        if self._wire is not None:
            self._pongs.append(waiter)
            _send(self._wire, b"PING\r\n")

    def _fail_handshake(self, exc: IntakeConnectError) -> None:
        if self._handshake is not None and not self._handshake.done():
            self._handshake.set_exception(exc)

    # ----------------------------------------------------------------- writing

    def _write(self, frame: bytes) -> None:
        self._out.append(frame)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _write_now(self, frame: bytes) -> None:
        """Onto the socket in this loop turn, behind what is queued: a new leader's SUB must
        reach the server before anything can report the leadership (a REST answer is written
        in a later turn), so that a publisher told of it finds the subscription there."""
        self._out.append(frame)
        self._flush()

    def _flush(self) -> None:
        self._flush_scheduled = False
        if not self._ready or self._wire is None or not self._out:
            return
        out, self._out = self._out, []
        _send(self._wire, b"".join(out))

    def _hold(self, frame: bytes) -> None:
        """Keep an ack for the next connection, within ``held_bytes``."""
        if self._out_bytes + len(frame) > self._settings.held_bytes:
            self._held_drops += 1
            return
        self._out.append(frame)
        self._out_bytes += len(frame)

    async def _ping_loop(self) -> None:
        settings = self._settings
        while True:
            await asyncio.sleep(settings.ping_interval_s)
            wire = self._wire
            if wire is None or not self._ready:
                continue
            if self._outstanding_pings >= settings.max_outstanding_pings:
                log.warning("NATS intake: %s stopped answering pings", self.connected_url)
                if wire.transport is not None:
                    wire.transport.abort()
                continue
            self._outstanding_pings += 1
            self._ping(None)


def _send(wire: _Wire, data: bytes) -> None:
    if wire.transport is not None and not wire.transport.is_closing():
        wire.transport.write(data)


def _address(url: str) -> tuple[str, int, bool]:
    parts = urlsplit(url if "://" in url else f"nats://{url}")
    return parts.hostname or "127.0.0.1", parts.port or DEFAULT_NATS_PORT, parts.scheme == "tls"


def _hostport(url: str) -> str:
    host, port, _ = _address(url)
    return f"{host}:{port}"


def _default_context() -> ssl.SSLContext:
    return ssl.create_default_context()
