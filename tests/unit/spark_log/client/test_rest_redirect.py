"""A bearer token must reach only the node it was meant for, never a redirect's target."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from spark_log.client.credentials import ClientCredentials
from spark_log.client.rest import RestClient


class _Recorder(BaseHTTPRequestHandler):
    """Answers 200 and remembers the headers of every request it got."""

    seen: list[dict[str, str]]

    def do_GET(self) -> None:
        self.server.seen.append({k.lower(): v for k, v in self.headers.items()})  # type: ignore[attr-defined]
        body = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


def _redirector(target: str) -> type[BaseHTTPRequestHandler]:
    class _Redirect(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(302)
            self.send_header("Location", f"{target}{self.path}")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            return

    return _Redirect


def _serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def target() -> Iterator[ThreadingHTTPServer]:
    yield from _serve(_Recorder)


@pytest.fixture
def redirecting(target: ThreadingHTTPServer) -> Iterator[ThreadingHTTPServer]:
    yield from _serve(_redirector(f"http://127.0.0.1:{target.server_address[1]}"))


def test_token_is_not_sent_to_a_redirect_target(redirecting, target):
    client = RestClient(
        [f"http://127.0.0.1:{redirecting.server_address[1]}"],
        timeout_s=5,
        credentials=ClientCredentials(token="llt_x_secret"),
    )
    resp = client.request("GET", "/v1/cluster", headers={"X-Trace": "t1"})
    assert resp.status == 200
    assert len(target.seen) == 1
    assert "authorization" not in target.seen[0]
    assert target.seen[0]["x-trace"] == "t1"


def test_token_is_sent_to_the_node_itself(target):
    client = RestClient(
        [f"http://127.0.0.1:{target.server_address[1]}"],
        timeout_s=5,
        credentials=ClientCredentials(token="llt_x_secret"),
    )
    client.request("GET", "/v1/cluster")
    assert target.seen[0]["authorization"] == "Bearer llt_x_secret"
