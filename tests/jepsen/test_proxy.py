"""LinkProxy against plain sockets: each mode does to bytes what its docstring says.

"Nothing arrives" is asserted with a short read timeout: an assertion window, not a wait for
state. Every socket and the proxy are closed whatever the test does.
"""

from __future__ import annotations

import queue
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from tests.support.jepsen.proxy import LinkProxy, Mode
from tests.support.waiting import wait_for

QUIET_WINDOW_S = 0.3  # "nothing arrives within this": short, the proxy is local
IO_TIMEOUT_S = 5.0

Link = tuple[socket.socket, socket.socket]
"""A client socket and the target's end of the same proxied connection."""


class Target:
    """A listening socket whose accepted connections the test reads and writes itself."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.accepted: queue.Queue[socket.socket] = queue.Queue()
        self._thread = threading.Thread(target=self._accept_loop, daemon=True)
        self._thread.start()

    def _accept_loop(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return  # closed
            conn.settimeout(IO_TIMEOUT_S)
            self.accepted.put(conn)

    def next_connection(self, timeout_s: float = IO_TIMEOUT_S) -> socket.socket:
        return self.accepted.get(timeout=timeout_s)

    def close(self) -> None:
        self.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self.listener.close()
        self._thread.join(IO_TIMEOUT_S)
        while not self.accepted.empty():
            self.accepted.get().close()


@pytest.fixture
def target() -> Iterator[Target]:
    t = Target()
    try:
        yield t
    finally:
        t.close()


@pytest.fixture
def proxy(target: Target) -> Iterator[LinkProxy]:
    p = LinkProxy("127.0.0.1", target.port, name="test")
    try:
        yield p
    finally:
        p.close()


@pytest.fixture
def sockets() -> Iterator[list[socket.socket]]:
    opened: list[socket.socket] = []
    try:
        yield opened
    finally:
        for s in opened:
            s.close()


def connect(proxy: LinkProxy, sockets: list[socket.socket]) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=IO_TIMEOUT_S)
    sockets.append(s)
    return s


def linked(proxy: LinkProxy, target: Target, sockets: list[socket.socket]) -> Link:
    """A client socket and the target's end of the same proxied connection."""
    client = connect(proxy, sockets)
    server = target.next_connection()
    sockets.append(server)
    return client, server


@pytest.fixture
def link(proxy: LinkProxy, target: Target, sockets: list[socket.socket]) -> Link:
    """The one proxied connection most tests start from: (client, the target's end)."""
    return linked(proxy, target, sockets)


def recv_exactly(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise ConnectionError(f"closed after {data!r}")
        data += chunk
    return data


def assert_forwards(sender: socket.socket, receiver: socket.socket, data: bytes) -> None:
    """``data`` sent on one end arrives, whole and unchanged, at the other end of the link."""
    sender.sendall(data)
    assert recv_exactly(receiver, len(data)) == data


def assert_silent(s: socket.socket) -> None:
    """Nothing (no byte, no FIN, no reset) arrives on ``s`` within the window."""
    s.settimeout(QUIET_WINDOW_S)
    try:
        with pytest.raises(TimeoutError):
            s.recv(1)
    finally:
        s.settimeout(IO_TIMEOUT_S)


def assert_reset(s: socket.socket) -> None:
    with pytest.raises(ConnectionResetError):
        s.sendall(b"x")
        s.recv(1)


def assert_new_connection_reset(proxy: LinkProxy, sockets: list[socket.socket]) -> None:
    try:
        fresh = connect(proxy, sockets)
    except ConnectionResetError:
        return  # the reset came before connect returned
    assert_reset(fresh)


def test_pass_forwards_both_ways(proxy: LinkProxy, link: Link) -> None:
    client, server = link
    assert_forwards(client, server, b"ping")
    assert_forwards(server, client, b"pong")
    assert proxy.mode is Mode.PASS and proxy.connection_count == 1


def test_blackhole_drops_silently_then_resets_broken_streams_on_heal(
    proxy: LinkProxy,
    target: Target,
    sockets: list[socket.socket],
    link: Link,
) -> None:
    client, server = link
    proxy.blackhole()
    client.sendall(b"lost")
    server.sendall(b"lost")
    assert_silent(server)
    assert_silent(client)  # a timeout, not a reset: the cable is cut
    # a new connection is accepted but never reaches the target
    late = connect(proxy, sockets)
    late.sendall(b"void")
    assert_silent(late)
    with pytest.raises(queue.Empty):
        target.next_connection(QUIET_WINDOW_S)

    proxy.pass_()
    assert_reset(client)  # its stream lost bytes: it cannot continue
    assert_reset(late)  # it never reached the target
    fresh_client, fresh_server = linked(proxy, target, sockets)
    assert_forwards(fresh_client, fresh_server, b"back")


def test_blackhole_keeps_a_connection_that_lost_nothing(proxy: LinkProxy, link: Link) -> None:
    client, server = link
    proxy.blackhole()
    proxy.pass_()
    assert_forwards(client, server, b"same")


def test_reset_rsts_current_and_new_connections(
    proxy: LinkProxy,
    target: Target,
    sockets: list[socket.socket],
    link: Link,
) -> None:
    client, server = link
    proxy.reset()
    assert_reset(client)
    with pytest.raises(ConnectionResetError):
        server.recv(1)
    assert_new_connection_reset(proxy, sockets)
    proxy.pass_()
    again, again_server = linked(proxy, target, sockets)
    assert_forwards(again, again_server, b"ok")


def test_delay_adds_latency_in_order(proxy: LinkProxy, link: Link) -> None:
    client, server = link
    proxy.delay(0.4)
    started = time.monotonic()
    for i in range(5):
        client.sendall(f"{i}".encode())
    assert recv_exactly(server, 5) == b"01234"
    assert time.monotonic() - started >= 0.4
    proxy.pass_()
    assert_forwards(client, server, b"z")


def test_hold_buffers_until_release(proxy: LinkProxy, link: Link) -> None:
    client, server = link
    proxy.hold()
    client.sendall(b"first")
    server.sendall(b"reply")
    assert_silent(server)
    assert_silent(client)
    client.sendall(b"second")
    proxy.release()
    assert recv_exactly(server, 11) == b"firstsecond"
    assert recv_exactly(client, 5) == b"reply"
    assert proxy.mode is Mode.PASS


def test_switching_from_another_thread(proxy: LinkProxy, link: Link) -> None:
    client, server = link
    switcher = threading.Thread(target=proxy.hold)
    switcher.start()
    switcher.join(IO_TIMEOUT_S)
    client.sendall(b"held")
    assert_silent(server)
    threading.Thread(target=proxy.release).start()
    assert recv_exactly(server, 4) == b"held"


def test_close_ends_connections_and_listener(target: Target, sockets: list[socket.socket]) -> None:
    proxy = LinkProxy("127.0.0.1", target.port)
    client, _server = linked(proxy, target, sockets)
    port = proxy.port
    proxy.close()
    with pytest.raises((ConnectionResetError, ConnectionError)):
        client.sendall(b"x")
        if not client.recv(1):
            raise ConnectionError("closed")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT_S).close()
    proxy.close()  # idempotent


def test_target_down_means_reset(sockets: list[socket.socket]) -> None:
    dead = socket.create_server(("127.0.0.1", 0))
    dead_port = dead.getsockname()[1]
    dead.close()
    with LinkProxy("127.0.0.1", dead_port) as proxy:
        assert_new_connection_reset(proxy, sockets)


def test_fin_is_forwarded_and_a_finished_link_is_forgotten(proxy: LinkProxy, link: Link) -> None:
    client, server = link
    client.shutdown(socket.SHUT_WR)
    assert server.recv(1) == b""  # the FIN went through
    server.sendall(b"bye")
    assert recv_exactly(client, 3) == b"bye"  # the other way still carries
    server.shutdown(socket.SHUT_WR)
    assert client.recv(1) == b""
    wait_for(lambda: proxy.connection_count == 0, message="the finished link dropped")
