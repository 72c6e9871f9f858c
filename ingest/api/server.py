"""uvicorn inside the node's own event loop (no second loop, no thread), over HTTPS when the
node config has ``[api_tls]``."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Generator
from typing import TYPE_CHECKING, TypedDict

import uvicorn

from ingest.api.app import close_app, create_app
from ingest.api.tls_extension import HttpToolsTlsProtocol
from ingest.groups.node_services import ConsumerServices
from spark_log.tls_config import ApiTlsConfig

if TYPE_CHECKING:
    from ingest.admin.node_view import NodeView

API_START_TIMEOUT_S = 10.0


class _EmbeddedServer(uvicorn.Server):
    """The node owns SIGINT/SIGTERM, so uvicorn must not install its own handlers."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class UvicornTlsOptions(TypedDict, total=False):
    """The ``uvicorn.Config`` keywords for HTTPS (none for plain HTTP; the CA and the client
    certificate mode only when ``[api_tls]`` names a CA)."""

    ssl_certfile: str
    ssl_keyfile: str
    http: type[HttpToolsTlsProtocol]
    ssl_ca_certs: str
    ssl_cert_reqs: int


def tls_options(tls: ApiTlsConfig) -> UvicornTlsOptions:
    """uvicorn's TLS settings for ``[api_tls]``: none without a certificate; with a CA, client
    certificates signed by it are verified when presented (CERT_OPTIONAL: tokens still work
    without one) or demanded (CERT_REQUIRED with ``require_client_cert``). The protocol puts
    the verified certificate in the request scope, where ``client_cert_principal`` reads it."""
    if not tls.enabled:
        return {}
    options: UvicornTlsOptions = {
        "ssl_certfile": tls.cert_file,
        "ssl_keyfile": tls.key_file,
        "http": HttpToolsTlsProtocol,
    }
    if tls.ca_file:
        options["ssl_ca_certs"] = tls.ca_file
        options["ssl_cert_reqs"] = (
            ssl.CERT_REQUIRED if tls.require_client_cert else ssl.CERT_OPTIONAL
        )
    return options


class ApiServer:
    def __init__(self, node: NodeView, host: str, port: int) -> None:
        self.services = ConsumerServices.for_node(node)
        self._app = create_app(node, self.services)
        config = uvicorn.Config(
            self._app,
            host=host,
            port=port,
            log_level="warning",
            lifespan="off",
            access_log=False,
            **tls_options(node.config.api_tls),
        )
        self._server = _EmbeddedServer(config)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._server.serve(), name="api")
        async with asyncio.timeout(API_START_TIMEOUT_S):
            while not self._server.started:
                if self._task.done():
                    self._task.result()  # re-raises the bind error
                    raise OSError("the API server stopped during start-up")
                await asyncio.sleep(0.01)

    async def stop(self) -> None:
        if self._task is None:
            return
        self._server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        await close_app(self._app)
