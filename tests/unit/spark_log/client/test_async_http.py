"""The client's fetch transport against a scripted HTTP/1.1 server on a real socket."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest

from spark_log.client.async_http import AsyncHttp, HttpProtocolError
from spark_log.errors import UnavailableError

Answer = Callable[[bytes], bytes | None]
"""The raw response to a request head; None closes the connection without answering."""


@dataclass
class Server:
    """Answers each request with ``answer``; counts connections and keeps the request heads."""

    answer: Answer
    connections: int = 0
    heads: list[bytes] = field(default_factory=list)
    writers: list[asyncio.StreamWriter] = field(default_factory=list)
    url: str = ""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                self.heads.append(head)
                response = self.answer(head)
                if response is None:
                    break
                writer.write(response)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Answer], Awaitable[Server]]]:
    servers: list[asyncio.Server] = []
    scripted: list[Server] = []

    async def start(answer: Answer) -> Server:
        server = Server(answer)
        listening = await asyncio.start_server(server.handle, "127.0.0.1", 0)
        servers.append(listening)
        scripted.append(server)
        port = listening.sockets[0].getsockname()[1]
        server.url = f"http://127.0.0.1:{port}"
        return server

    yield start
    for listening in servers:
        listening.close()
    for server in scripted:
        for writer in server.writers:
            writer.close()


def _ok(body: bytes, extra: str = "") -> Answer:
    def answer(_head: bytes) -> bytes:
        return (
            f"HTTP/1.1 200 OK\r\ncontent-length: {len(body)}\r\nX-Thing: yes\r\n{extra}\r\n"
        ).encode() + body

    return answer


async def test_a_get_sends_query_and_headers_and_reuses_its_connection(serve) -> None:
    server = await serve(_ok(b"arrow bytes"))
    http = AsyncHttp()
    try:
        for _ in range(3):
            resp = await http.get(
                server.url, "/v1/x", {"offset": 5, "none": None}, {"Accept": "a/b"}, 5.0
            )
            assert (resp.status, resp.body, resp.headers["x-thing"]) == (200, b"arrow bytes", "yes")
        assert server.connections == 1  # kept alive
        head = server.heads[0].decode()
        assert head.startswith("GET /v1/x?offset=5 HTTP/1.1\r\n")
        assert "Accept: a/b\r\n" in head and "none" not in head
    finally:
        await http.close()


async def test_a_chunked_body_and_an_error_status(serve) -> None:
    chunked = (
        b"HTTP/1.1 404 Not Found\r\ntransfer-encoding: chunked\r\n\r\n"
        b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
    )
    server = await serve(lambda _head: chunked)
    http = AsyncHttp()
    try:
        resp = await http.get(server.url, "/", {}, {}, 5.0)
        assert (resp.status, resp.body) == (404, b"abcde")
    finally:
        await http.close()


async def test_a_connection_the_node_closed_while_idle_is_replaced(serve) -> None:
    server = await serve(_ok(b"x", "connection: close\r\n"))
    http = AsyncHttp()
    try:
        for _ in range(2):
            assert (await http.get(server.url, "/", {}, {}, 5.0)).body == b"x"
        assert server.connections == 2
    finally:
        await http.close()


async def test_an_unreachable_node_and_a_silent_one_are_unavailable(serve) -> None:
    silent = await serve(lambda _head: None)
    http = AsyncHttp()
    try:
        with pytest.raises(UnavailableError):
            await http.get("http://127.0.0.1:1", "/", {}, {}, 5.0)
        with pytest.raises(UnavailableError):
            await http.get(silent.url, "/", {}, {}, 5.0)
    finally:
        await http.close()


async def test_a_slow_node_times_out(serve) -> None:
    never = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await never.wait()

    listening = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    http = AsyncHttp()
    try:
        with pytest.raises(UnavailableError, match="did not answer"):
            await http.get(f"http://127.0.0.1:{port}", "/", {}, {}, 0.2)
    finally:
        await http.close()
        never.set()
        listening.close()


async def test_an_answer_that_is_not_http_is_refused(serve) -> None:
    server = await serve(lambda _head: b"SSH-2.0-OpenSSH\r\n\r\n")
    http = AsyncHttp()
    try:
        with pytest.raises(HttpProtocolError):
            await http.get(server.url, "/", {}, {}, 5.0)
    finally:
        await http.close()
