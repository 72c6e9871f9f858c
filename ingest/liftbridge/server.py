"""The gRPC server of the Liftbridge API, in the node's own event loop (``grpc.aio``).

It listens on ``liftbridge_port`` of ``api_host`` (0: no server), over TLS with the node's
``api_tls`` certificate when the REST API has one, so the two APIs share one trust setup.
"""

from __future__ import annotations

import logging
from pathlib import Path

import grpc

from ingest.admin.node_view import NodeView
from ingest.groups.node_services import ConsumerServices
from ingest.liftbridge.servicer import LiftbridgeApi
from spark_log.liftbridge import api_pb2_grpc
from spark_log.tls_config import ApiTlsConfig

log = logging.getLogger("liftlog.liftbridge")

STOP_GRACE_S = 2.0
"""How long running RPCs (subscriptions) get to end when the node stops."""
MESSAGE_SLACK_BYTES = 64 * 1024
"""Room for a request's other fields beside a record of the largest size a node accepts."""


def server_credentials(tls: ApiTlsConfig) -> grpc.ServerCredentials | None:
    """TLS for the gRPC API from ``[api_tls]`` (None: plaintext). With a CA, client
    certificates signed by it are verified; ``require_client_cert`` demands one."""
    if not tls.enabled:
        return None
    pair = (Path(tls.key_file).read_bytes(), Path(tls.cert_file).read_bytes())
    root = Path(tls.ca_file).read_bytes() if tls.ca_file else None
    return grpc.ssl_server_credentials(
        [pair], root_certificates=root, require_client_auth=bool(root and tls.require_client_cert)
    )


class LiftbridgeServer:
    """Serves ``proto.API`` for one node; ``start`` binds, ``stop`` ends every RPC."""

    def __init__(self, node: NodeView, services: ConsumerServices) -> None:
        self._node = node
        self._services = services
        self._server: grpc.aio.Server | None = None

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
        servicer = LiftbridgeApi(self._node, self._services)
        api_pb2_grpc.add_APIServicer_to_server(servicer, server)  # type: ignore[no-untyped-call]
        address = f"{config.api_host}:{config.liftbridge_port}"
        credentials = server_credentials(config.api_tls)
        try:
            if credentials is None:
                server.add_insecure_port(address)
            else:
                server.add_secure_port(address, credentials)
        except RuntimeError as exc:  # grpc's only signal of a failed bind
            raise OSError(f"the Liftbridge API cannot listen on {address}: {exc}") from exc
        await server.start()
        self._server = server
        log.info("liftbridge API on %s", config.advertised_liftbridge_address)

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop(STOP_GRACE_S)
            self._server = None
