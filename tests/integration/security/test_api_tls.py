"""The REST server's TLS as the node configures it: a real uvicorn over HTTPS with the
node's TLS options, a verified client certificate naming the principal, a certificate of
another CA refused by the handshake, plain HTTP refused."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import ssl
import threading
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ingest.api.client_cert import client_cert_principal
from ingest.api.server import tls_options
from liftlog.embedded.certs import StackCerts, generate_stack_certs
from liftlog.embedded.ports import free_port
from liftlog.embedded.probes import http_status, tls_client_context
from spark_log.errors import ConfigError
from spark_log.tls_config import ApiTlsConfig
from tests.support.waiting import wait_for

REQUEST_TIMEOUT_S = 5.0


async def _whoami(request: Request) -> JSONResponse:
    return JSONResponse({"principal": client_cert_principal(request)})


class _ThreadServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


@contextlib.contextmanager
def _serve(tls: ApiTlsConfig) -> Iterator[int]:
    """uvicorn with the node's TLS options on a free port, in a thread, stopped on exit."""
    port = free_port()
    app = Starlette(routes=[Route("/whoami", _whoami)])
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", lifespan="off", **tls_options(tls)
    )
    server = _ThreadServer(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started or not thread.is_alive(), message="uvicorn started")
        assert server.started, "uvicorn did not start"
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        assert not thread.is_alive()


def _principal(port: int, context: ssl.SSLContext) -> str | None:
    conn = http.client.HTTPSConnection(
        "127.0.0.1", port, context=context, timeout=REQUEST_TIMEOUT_S
    )
    try:
        conn.request("GET", "/whoami")
        response = conn.getresponse()
        assert response.status == 200
        return json.loads(response.read())["principal"]
    finally:
        conn.close()


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> StackCerts:
    return generate_stack_certs(tmp_path_factory.mktemp("tls"), [1, 2])


@pytest.fixture(scope="module")
def other_certs(tmp_path_factory: pytest.TempPathFactory) -> StackCerts:
    return generate_stack_certs(tmp_path_factory.mktemp("other-tls"), [1])


def _node_tls(certs: StackCerts, *, require: bool = False) -> ApiTlsConfig:
    node = certs.nodes[1]
    return ApiTlsConfig(node.cert_file, node.key_file, certs.ca_file, require)


def test_client_certificate_names_the_principal(certs: StackCerts) -> None:
    with _serve(_node_tls(certs)) as port:
        admin = tls_client_context(certs.ca_file, certs.admin.cert_file, certs.admin.key_file)
        assert _principal(port, admin) == "admin"
        node2 = certs.nodes[2]
        as_node = tls_client_context(certs.ca_file, node2.cert_file, node2.key_file)
        assert _principal(port, as_node) == "liftlog-node-2"
        # no client certificate: TLS works, no principal (a token must name the caller)
        assert _principal(port, tls_client_context(certs.ca_file)) is None


def test_certificate_of_another_ca_is_refused(certs: StackCerts, other_certs: StackCerts) -> None:
    with _serve(_node_tls(certs)) as port:
        stranger = other_certs.admin
        context = tls_client_context(certs.ca_file, stranger.cert_file, stranger.key_file)
        with pytest.raises((ssl.SSLError, ConnectionError)):
            _principal(port, context)


def test_required_client_certificate(certs: StackCerts) -> None:
    with _serve(_node_tls(certs, require=True)) as port:
        with pytest.raises((ssl.SSLError, ConnectionError)):
            _principal(port, tls_client_context(certs.ca_file))
        admin = tls_client_context(certs.ca_file, certs.admin.cert_file, certs.admin.key_file)
        assert _principal(port, admin) == "admin"


def test_https_only(certs: StackCerts) -> None:
    with _serve(_node_tls(certs)) as port:
        assert http_status(f"http://127.0.0.1:{port}/whoami") is None
        context = tls_client_context(certs.ca_file)
        assert http_status(f"https://127.0.0.1:{port}/whoami", context=context) == 200
        # a client that does not trust the stack's CA refuses the server
        assert http_status(f"https://127.0.0.1:{port}/whoami") is None


def test_plain_http_has_no_principal(certs: StackCerts) -> None:
    with _serve(ApiTlsConfig()) as port:
        assert tls_options(ApiTlsConfig()) == {}
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)
        conn.request("GET", "/whoami")
        assert json.loads(conn.getresponse().read()) == {"principal": None}
        conn.close()


def test_api_tls_config_is_checked(certs: StackCerts, tmp_path: Path) -> None:
    node = certs.nodes[1]
    with pytest.raises(ConfigError, match="together"):
        ApiTlsConfig(cert_file=node.cert_file)
    with pytest.raises(ConfigError, match="require_client_cert needs"):
        ApiTlsConfig(node.cert_file, node.key_file, require_client_cert=True)
    with pytest.raises(ConfigError, match="no such file"):
        ApiTlsConfig(node.cert_file, str(tmp_path / "missing.key"))
    assert ApiTlsConfig(node.cert_file, node.key_file).scheme == "https"
    assert ApiTlsConfig().scheme == "http"
