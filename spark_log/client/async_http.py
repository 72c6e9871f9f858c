"""GETs on the event loop, over kept-alive connections: what the client's fetches go through.

A fetch may wait at the partition's end for as long as its ``wait_ms``. Run on a thread (as
the client's other REST calls are), every waiting fetch would hold one of the few threads of
asyncio's default executor, so a process could follow only a handful of partitions at once,
and every fetch would open a new connection. Here a waiting fetch is a coroutine: a thousand
subscriptions wait on one thread, and a connection is reused by the next fetch to the same
node. HTTP/1.1 only, as the nodes speak it: a response has a ``Content-Length`` or chunked
body; redirects are not followed (a bearer token must never follow one).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

from spark_log.client.rest import RestResponse
from spark_log.client.scheme_hint import https_hint
from spark_log.errors import UnavailableError

MAX_IDLE_PER_NODE = 64
"""Kept-alive connections per node beyond which a finished one is closed."""
MAX_HEADER_BYTES = 64 * 1024


class HttpProtocolError(UnavailableError):
    """A node's answer that is not HTTP/1.1 as expected (the connection is dropped)."""


@dataclass(frozen=True)
class _Origin:
    scheme: str
    host: str
    port: int


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def close(self) -> None:
        self.writer.close()


class AsyncHttp:
    """GET requests with a pool of kept-alive connections per node."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        self._ssl_context = ssl_context
        self._idle: defaultdict[_Origin, list[_Connection]] = defaultdict(list)

    async def get(
        self,
        base: str,
        path: str,
        params: Mapping[str, object],
        headers: dict[str, str],
        timeout_s: float,
    ) -> RestResponse:
        """``GET base+path?params`` (None values left out); UnavailableError when the node
        cannot be reached or does not answer within ``timeout_s``."""
        origin = _origin(base)
        query = urlencode({k: v for k, v in params.items() if v is not None})
        target = f"{urlsplit(base).path.rstrip('/')}{path}" + (f"?{query}" if query else "")
        request = _request_bytes(origin, target, headers)
        try:
            async with asyncio.timeout(timeout_s):
                return await self._exchange(origin, request)
        except TimeoutError:
            raise UnavailableError(f"{base} did not answer within {timeout_s:.0f} s") from None

    async def close(self) -> None:
        idle, self._idle = self._idle, defaultdict(list)
        for connections in idle.values():
            for connection in connections:
                connection.close()
                with contextlib.suppress(OSError):
                    await connection.writer.wait_closed()

    async def _exchange(self, origin: _Origin, request: bytes) -> RestResponse:
        """Send on an idle connection (once more on a new one if the node had closed it)."""
        reused = self._take(origin)
        if reused is not None:
            try:
                return await self._round_trip(origin, reused, request)
            except (OSError, asyncio.IncompleteReadError):
                reused.close()  # closed by the node while idle: not a failure of this request
        connection = await self._connect(origin)
        try:
            return await self._round_trip(origin, connection, request)
        except (OSError, asyncio.IncompleteReadError) as exc:
            connection.close()
            hint = await _scheme_hint(origin, exc)
            raise UnavailableError(hint or f"{origin.host}:{origin.port}: {exc}") from None
        except BaseException:
            connection.close()
            raise

    async def _round_trip(
        self, origin: _Origin, connection: _Connection, request: bytes
    ) -> RestResponse:
        connection.writer.write(request)
        await connection.writer.drain()
        status, headers = await _read_head(connection.reader)
        body = await _read_body(connection.reader, headers)
        if headers.get("connection", "").lower() == "close":
            connection.close()
        else:
            self._give_back(origin, connection)
        return RestResponse(status, headers, body)

    async def _connect(self, origin: _Origin) -> _Connection:
        tls = self._ssl_context if origin.scheme == "https" else None
        if origin.scheme == "https" and tls is None:
            tls = ssl.create_default_context()
        try:
            reader, writer = await asyncio.open_connection(
                origin.host, origin.port, ssl=tls, limit=MAX_HEADER_BYTES
            )
        except OSError as exc:
            raise UnavailableError(f"cannot reach {origin.host}:{origin.port}: {exc}") from None
        return _Connection(reader, writer)

    def _take(self, origin: _Origin) -> _Connection | None:
        idle = self._idle[origin]
        while idle:
            connection = idle.pop()
            if not connection.writer.is_closing() and not connection.reader.at_eof():
                return connection
            connection.close()
        return None

    def _give_back(self, origin: _Origin, connection: _Connection) -> None:
        idle = self._idle[origin]
        if len(idle) < MAX_IDLE_PER_NODE:
            idle.append(connection)
        else:
            connection.close()


async def _scheme_hint(origin: _Origin, exc: BaseException) -> str | None:
    """The "use https://..." hint when a TLS port dropped a plain HTTP request unanswered."""
    dropped = isinstance(exc, asyncio.IncompleteReadError | ConnectionResetError)
    if origin.scheme != "http" or not dropped:
        return None
    return await asyncio.to_thread(https_hint, f"http://{origin.host}:{origin.port}")


def _origin(base: str) -> _Origin:
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UnavailableError(f"not a node URL: {base!r}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return _Origin(parts.scheme, parts.hostname, port)


def _request_bytes(origin: _Origin, target: str, headers: dict[str, str]) -> bytes:
    lines = [f"GET {target} HTTP/1.1", f"Host: {origin.host}:{origin.port}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError:
        raise HttpProtocolError("a response head larger than 64 KiB") from None
    status_line, *lines = head.decode("latin-1").split("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise HttpProtocolError(f"not an HTTP/1.1 status line: {status_line[:80]!r}")
    headers: dict[str, str] = {}
    for line in lines:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if headers.get("transfer-encoding", "").lower() == "chunked":
        return await _read_chunked(reader)
    length = headers.get("content-length")
    if length is None:
        return await reader.read()  # the body ends with the connection
    if not length.isdigit():
        raise HttpProtocolError(f"a Content-Length that is not a number: {length[:40]!r}")
    return await reader.readexactly(int(length))


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    while True:
        size_line = (await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip()
        try:
            size = int(size_line, 16)
        except ValueError:
            raise HttpProtocolError(f"a chunk size that is not hex: {size_line[:40]!r}") from None
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":
                pass  # trailers
            return b"".join(chunks)
        chunks.append(await reader.readexactly(size))
        await reader.readexactly(2)
