"""A TCP proxy whose link can be cut, reset, slowed or held at any moment: the network faults.

Each ``LinkProxy`` listens on a free port of 127.0.0.1 and forwards every connection to one
target. It runs in its own thread with its own event loop, so a test whose loop is blocked
(or a paused process on the other end) never stalls it, and a mode switch from any thread takes
effect before the call returns:

- ``pass_()``: forward.
- ``blackhole()``: a cut cable. Connections stay open and new ones are accepted, but every
  byte (and every FIN) is dropped both ways: peers see timeouts, never resets. A stream that
  lost bytes cannot continue (TCP would have retransmitted them, or timed the connection out),
  so leaving the blackhole resets exactly those connections, and the ones accepted during it
  (they never reached the target); the others carry on.
- ``reset()``: RST (SO_LINGER 0) every connection, and every new one until another mode.
- ``delay(seconds)``: forward with that much added latency, in order.
- ``hold()``: buffer bytes without forwarding; ``release()`` flushes them in order, then passes.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import socket
import struct
import threading
from collections import deque
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from spark_log.errors import InvalidRequestError, LiftlogError

LISTEN_HOST = "127.0.0.1"
READ_CHUNK_BYTES = 64 * 1024
# a mode switch, start or close runs on the proxy's loop; this bounds the caller's wait
CONTROL_TIMEOUT_S = 10.0
UPSTREAM_CONNECT_TIMEOUT_S = 5.0
_LINGER_RST = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() sends RST


class ProxyError(LiftlogError):
    """The proxy could not start, or a control call did not complete on its loop."""


class Mode(enum.Enum):
    PASS = "pass"
    BLACKHOLE = "blackhole"
    RESET = "reset"
    DELAY = "delay"
    HOLD = "hold"


@dataclass
class _Direction:
    """One way of a link: the bytes queued for delivery and the bytes held back."""

    writer: asyncio.StreamWriter | None
    queue: deque[tuple[float, bytes | None]] = field(default_factory=deque)
    held: list[bytes | None] = field(default_factory=list)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    last_due: float = 0.0
    eof_sent: bool = False


@dataclass(eq=False)  # identity: links live in a set
class _Link:
    """One proxied connection: client side, upstream side (None when never connected)."""

    client: asyncio.StreamWriter
    upstream: asyncio.StreamWriter | None
    to_upstream: _Direction
    to_client: _Direction
    lost_bytes: bool = False
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    closed: bool = False


class LinkProxy:
    """127.0.0.1:<port> → ``target_host:target_port``, with switchable faults (see module)."""

    def __init__(self, target_host: str, target_port: int, *, name: str = "") -> None:
        self.target_host = target_host
        self.target_port = target_port
        self.name = name or f"proxy→{target_host}:{target_port}"
        self.port = 0
        self._mode = Mode.PASS
        self._delay_s = 0.0
        self._links: set[_Link] = set()
        self._closing = False
        self._accepting: set[asyncio.Task[Any]] = set()  # accepts still connecting upstream
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name=self.name, daemon=True)
        self._thread.start()
        try:
            self._call(self._listen())
        except ProxyError:
            self._stop_loop()
            raise

    def __repr__(self) -> str:
        return f"<LinkProxy {self.name} :{self.port} {self.mode.value}>"

    @property
    def address(self) -> str:
        """``127.0.0.1:<port>``: what the client is given instead of the target."""
        return f"{LISTEN_HOST}:{self.port}"

    @property
    def mode(self) -> Mode:
        return self._mode

    @property
    def connection_count(self) -> int:
        """Connections open through the proxy now (for assertions and diagnostics)."""
        return len(self._links)

    # ------------------------------------------------------------------ control (any thread)

    def pass_(self) -> None:
        """Forward everything (what a healed link does)."""
        self._call(self._switch(Mode.PASS))

    def blackhole(self) -> None:
        """Drop every byte both ways, keep connections open: a cut cable."""
        self._call(self._switch(Mode.BLACKHOLE))

    def reset(self) -> None:
        """RST every connection now, and every new one until another mode."""
        self._call(self._switch(Mode.RESET))

    def delay(self, seconds: float) -> None:
        """Forward with ``seconds`` of added latency (order preserved)."""
        if seconds < 0:
            raise InvalidRequestError(f"delay must be >= 0 seconds, got {seconds}")
        self._call(self._switch(Mode.DELAY, seconds))

    def hold(self) -> None:
        """Buffer bytes without forwarding until ``release()``."""
        self._call(self._switch(Mode.HOLD))

    def release(self) -> None:
        """Flush what was held, in order, then pass."""
        self._call(self._switch(Mode.PASS))

    def close(self) -> None:
        """Stop listening, reset every connection and end the proxy's thread (idempotent)."""
        if not self._thread.is_alive():
            return
        try:
            self._call(self._shutdown())
        finally:
            self._stop_loop()

    def __enter__(self) -> LinkProxy:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _call(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` on the proxy's loop and wait for it: the switch is in effect on return."""
        if not self._thread.is_alive():
            coro.close()
            raise ProxyError(f"{self.name} is closed")
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            future.result(CONTROL_TIMEOUT_S)
        except TimeoutError as exc:
            future.cancel()
            raise ProxyError(f"{self.name}: control call timed out") from exc
        except OSError as exc:
            raise ProxyError(f"{self.name}: {exc}") from exc

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(CONTROL_TIMEOUT_S)
        if not self._thread.is_alive():
            self._loop.close()

    # ------------------------------------------------------------------ on the proxy's loop

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._accept, LISTEN_HOST, 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _shutdown(self) -> None:
        self._closing = True
        await asyncio.gather(*self._accepting, return_exceptions=True)  # they see _closing
        if self._server is not None:
            self._server.close()
        for link in list(self._links):
            self._abort(link)
        tasks = [t for link in self._links for t in link.tasks]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._links.clear()

    async def _switch(self, mode: Mode, delay_s: float = 0.0) -> None:
        previous = self._mode
        self._mode, self._delay_s = mode, delay_s
        if mode is Mode.RESET:
            for link in list(self._links):
                self._abort(link)
        elif mode is Mode.BLACKHOLE:
            for link in self._links:  # bytes in flight on a cut cable are gone
                for direction in (link.to_upstream, link.to_client):
                    link.lost_bytes |= bool(direction.queue or direction.held)
                    direction.queue.clear()
                    direction.held.clear()
        elif previous is Mode.BLACKHOLE:
            for link in list(self._links):
                if link.lost_bytes or link.upstream is None:
                    self._abort(link)
        if mode is not Mode.HOLD:
            for link in self._links:
                for direction in (link.to_upstream, link.to_client):
                    self._flush_held(direction)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is None:  # start_server always runs the callback in a task
            raise ProxyError("accept outside a task")
        self._accepting.add(task)
        try:
            await self._open_link(reader, writer)
        finally:
            self._accepting.discard(task)

    async def _open_link(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._refusing():
            _rst(writer)
            return
        upstream_reader: asyncio.StreamReader | None = None
        upstream: asyncio.StreamWriter | None = None
        if self._mode is not Mode.BLACKHOLE:
            try:
                upstream_reader, upstream = await asyncio.wait_for(
                    asyncio.open_connection(self.target_host, self.target_port),
                    UPSTREAM_CONNECT_TIMEOUT_S,
                )
            except (OSError, TimeoutError):
                _rst(writer)  # the target refused: so does the proxy
                return
            if self._refusing():  # closed or switched to reset while connecting
                _rst(writer)
                _rst(upstream)
                return
        link = _Link(writer, upstream, _Direction(upstream), _Direction(writer))
        self._links.add(link)
        link.tasks.append(asyncio.create_task(self._pump(link, reader, link.to_upstream)))
        link.tasks.append(asyncio.create_task(self._deliver(link, link.to_upstream)))
        if upstream_reader is not None:
            link.tasks.append(
                asyncio.create_task(self._pump(link, upstream_reader, link.to_client))
            )
            link.tasks.append(asyncio.create_task(self._deliver(link, link.to_client)))

    def _refusing(self) -> bool:
        """New connections get a reset: the proxy is closing or in ``reset`` mode."""
        return self._closing or self._mode is Mode.RESET

    async def _pump(self, link: _Link, reader: asyncio.StreamReader, out: _Direction) -> None:
        """Read one side; queue, hold or drop each chunk by the mode when it arrives."""
        try:
            while True:
                data = await reader.read(READ_CHUNK_BYTES)
                self._route(link, out, data or None)
                if not data:
                    return
        except OSError:
            self._abort(link)  # a reset on one side is a reset on the other

    def _route(self, link: _Link, out: _Direction, data: bytes | None) -> None:
        """``data`` None is the end of the stream (a FIN), carried like bytes."""
        if self._mode is Mode.BLACKHOLE or out.writer is None:
            link.lost_bytes = True
            return
        if self._mode is Mode.HOLD:
            out.held.append(data)
            return
        self._enqueue(out, data, self._delay_s if self._mode is Mode.DELAY else 0.0)

    def _enqueue(self, out: _Direction, data: bytes | None, delay_s: float) -> None:
        due = max(self._loop.time() + delay_s, out.last_due)  # never overtake earlier bytes
        out.last_due = due
        out.queue.append((due, data))
        out.ready.set()

    def _flush_held(self, out: _Direction) -> None:
        held, out.held = out.held, []
        for data in held:
            self._enqueue(out, data, self._delay_s if self._mode is Mode.DELAY else 0.0)

    async def _deliver(self, link: _Link, out: _Direction) -> None:
        """Write queued chunks in order, each no earlier than its due time."""
        writer = out.writer
        if writer is None:
            return
        try:
            while True:
                while not out.queue:
                    out.ready.clear()
                    await out.ready.wait()
                due, data = out.queue[0]
                wait_s = due - self._loop.time()
                if wait_s > 0:
                    await asyncio.sleep(wait_s)  # the emulated latency itself
                    continue  # the queue may have been cleared (blackhole) meanwhile
                out.queue.popleft()
                if data is None:
                    if writer.can_write_eof():
                        writer.write_eof()
                    out.eof_sent = True
                    if link.to_upstream.eof_sent and link.to_client.eof_sent:
                        self._close(link)  # both sides finished: nothing left to carry
                        return
                    continue
                writer.write(data)
                await writer.drain()
        except OSError:
            self._abort(link)  # the receiving side is gone: reset the sending side too

    def _close(self, link: _Link) -> None:
        """Both sides finished their streams: close both and forget the link."""
        if link.closed:
            return
        link.closed = True
        self._links.discard(link)
        for writer in (link.client, link.upstream):
            if writer is not None:
                writer.close()
        for task in link.tasks:
            if task is not asyncio.current_task():
                task.cancel()

    def _abort(self, link: _Link) -> None:
        """RST both sides of ``link``."""
        _rst(link.client)
        _rst(link.upstream)
        link.closed = True
        self._links.discard(link)
        for task in link.tasks:
            if task is not asyncio.current_task():
                task.cancel()


def _rst(writer: asyncio.StreamWriter | None) -> None:
    """Close with SO_LINGER 0, so the peer gets a reset rather than an orderly FIN."""
    if writer is None:
        return
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):  # already closed: nothing left to reset
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RST)
    writer.transport.abort()
