"""Readiness probes answer False/None for "not yet", whatever answers on the port."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from liftlog.embedded.probes import http_ok, http_status


@pytest.fixture
def not_http_server() -> Iterator[int]:
    """A server that greets like nats-server does: a line that is not an HTTP status line."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.sendall(b'INFO {"server_id":"x","port":4222}\r\n')

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()


def test_http_probe_of_a_port_held_by_another_protocol_is_no_answer(not_http_server: int) -> None:
    """A node whose API port another server took must not crash the launcher's readiness
    poll with BadStatusLine: the probe says "no answer" and the node's own start fails."""
    url = f"http://127.0.0.1:{not_http_server}/readyz"
    assert http_status(url) is None
    assert not http_ok(url)
