"""The gRPC server of the Liftbridge API, in the node's own event loop (``grpc.aio``).

It listens on ``liftbridge_port`` of ``api_host`` (0: no server), over TLS with the node's
``api_tls`` certificate when the REST API has one, so the two APIs share one trust setup.
Without ``api_tls.ca_file`` grpc's own TLS serves (no client certificates, as REST); with it
the TLS front (tls_front.py) serves, verifying client certificates when presented (or
demanding one with ``require_client_cert``) exactly as REST does, which grpc cannot.
"""

from __future__ import annotations

import logging
from pathlib import Path

import grpc

from ingest.admin.node_view import NodeView
from ingest.groups.node_services import ConsumerServices
from ingest.liftbridge.peer_channels import close_peer_channels
from ingest.liftbridge.servicer import LiftbridgeApi
from ingest.liftbridge.tls_front import TlsFront
from spark_log.liftbridge import api_pb2_grpc
from spark_log.tls_config import ApiTlsConfig

log = logging.getLogger("liftlog.liftbridge")

STOP_GRACE_S = 2.0
"""How long running RPCs (subscriptions) get to end when the node stops."""
MESSAGE_SLACK_BYTES = 64 * 1024
"""Room for a request's other fields beside a record of the largest size a node accepts."""


def server_credentials(tls: ApiTlsConfig) -> grpc.ServerCredentials:
    """grpc's TLS with the node's certificate, asking no client certificate: for
    ``[api_tls]`` without a CA (with one, the TLS front serves)."""
    pair = (Path(tls.key_file).read_bytes(), Path(tls.cert_file).read_bytes())
    return grpc.ssl_server_credentials([pair])


class LiftbridgeServer:
    """Serves ``proto.API`` for one node; ``start`` binds, ``stop`` ends every RPC."""

    def __init__(self, node: NodeView, services: ConsumerServices) -> None:
        self._node = node
        self._services = services
        self._server: grpc.aio.Server | None = None
        self._front: TlsFront | None = None
        self._servicer: LiftbridgeApi | None = None

    @property
    def enabled(self) -> bool:
        return self._node.config.liftbridge_port != 0

    async def start(self) -> None:
        if not self.enabled:
            return
        config = self._node.config
        limit = config.limits.max_request_bytes + MESSAGE_SLACK_BYTES
        server = grpc.aio.server(
            options=[
                ("grpc.max_receive_message_length", limit),
                ("grpc.max_send_message_length", limit),
                ("grpc.so_reuseport", 0),
            ]
        )
        servicer = self._servicer = LiftbridgeApi(self._node, self._services)
        api_pb2_grpc.add_APIServicer_to_server(servicer, server)
        address = f"{config.api_host}:{config.liftbridge_port}"
        tls = config.api_tls
        front = self._front = TlsFront(tls) if tls.ca_file else None
        try:
            if front is not None:
                server.add_insecure_port(front.backend_address)
            elif tls.enabled:
                server.add_secure_port(address, server_credentials(tls))
            else:
                server.add_insecure_port(address)
        except RuntimeError as exc:  # grpc's only signal of a failed bind
            await self.stop()
            raise OSError(f"the Liftbridge API cannot listen on {address}: {exc}") from exc
        await server.start()
        self._server = server
        if front is not None:
            try:
                await front.start(config.api_host, config.liftbridge_port)
            except OSError as exc:
                await self.stop()
                raise OSError(f"the Liftbridge API cannot listen on {address}: {exc}") from exc
        log.info("liftbridge API on %s", config.advertised_liftbridge_address)

    async def stop(self) -> None:
        """No new connections, running RPCs get ``STOP_GRACE_S`` to end, then every
        connection is closed, the channels to other nodes' APIs too."""
        if self._front is not None:
            self._front.stop_accepting()
        if self._server is not None:
            running = self._servicer is not None and self._servicer.running > 0
            await self._server.stop(STOP_GRACE_S if running else None)
            self._server = None
        if self._front is not None:
            await self._front.stop()
            self._front = None
        await close_peer_channels(self._node)
