"""A REST long poll with as little client code as possible between the socket and the clock.

A thousand polls through a full HTTP client would measure the client: its per-response cost
in Python is larger than the node's. A poll here writes one HTTP/1.1 request on its own
connection and reads the answer's headers and body, nothing more, so the time it reports is
when the node's answer arrived.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from liftlog.bench.errors import BenchError

CONNECT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class PollAnswer:
    status: int
    body_bytes: int
    answered_at: float
    """``time.perf_counter()`` when the whole answer had been read."""


class LongPoll:
    """One connection, one request; ``sent`` once the request is on the wire."""

    def __init__(self, api_url: str, path: str) -> None:
        parts = urlsplit(api_url)
        if parts.scheme != "http" or parts.hostname is None or parts.port is None:
            raise BenchError(f"long polls need a plain http://host:port URL, got {api_url}")
        self._host = parts.hostname
        self._port = parts.port
        self._request = (
            f"GET {path} HTTP/1.1\r\nHost: {self._host}:{self._port}\r\n"
            "Accept: application/json\r\nConnection: close\r\n\r\n"
        ).encode()
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def send(self) -> None:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(self._host, self._port), CONNECT_TIMEOUT_S
        )
        self._reader, self._writer = reader, writer
        writer.write(self._request)
        await writer.drain()

    async def answer(self) -> PollAnswer:
        """Read the answer (the node holds it until the HW moves or its wait ends)."""
        if self._reader is None or self._writer is None:
            raise BenchError("answer() before send()")
        try:
            head = await self._reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = _content_length(head)
            body = await self._reader.readexactly(length) if length else b""
            return PollAnswer(status, len(body), time.perf_counter())
        finally:
            self._writer.close()


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    raise BenchError("an answer without Content-Length")
