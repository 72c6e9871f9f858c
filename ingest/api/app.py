"""The FastAPI app every node serves, assembled from its route groups.

Each group lives in its own ``*_routes`` module; this one decides only what every request
goes through first (authentication, unknown-parameter refusal, the body limit, the error
handlers) and the order the groups are installed in, which is the order of ``/openapi.json``.
"""

from __future__ import annotations

from fastapi import Depends, FastAPI
from fastapi_offline import FastAPIOffline

from ingest.admin.node_view import NodeView
from ingest.api.activity_routes import install_activity_routes
from ingest.api.auth import auth_dependency
from ingest.api.auth_first import authenticating_route_class
from ingest.api.auth_routes import install_auth_routes
from ingest.api.body_limit import BodyLimitMiddleware
from ingest.api.cluster_routes import install_cluster_routes
from ingest.api.cursor_routes import install_cursor_routes
from ingest.api.encryption_routes import install_encryption_routes
from ingest.api.errors import ERROR_RESPONSES, install_error_handlers
from ingest.api.group_routes import install_group_routes
from ingest.api.health_routes import install_health_routes
from ingest.api.record_routes import install_record_routes
from ingest.api.schema_routes import install_schema_routes
from ingest.api.stream_routes import install_stream_routes
from ingest.api.strict_params import refuse_unknown_params
from ingest.groups.node_services import ConsumerServices


def create_app(node: NodeView, services: ConsumerServices | None = None) -> FastAPI:
    """``services``: the node's cursor and group services, shared with its other APIs (made
    here when not given)."""
    app = FastAPIOffline(  # /docs and /redoc from the package's own Swagger UI files, no CDN
        title="Liftlog",
        version="0.1.0",
        description="Durable, partitioned, offset-addressed streams recorded from NATS subjects.",
        responses=ERROR_RESPONSES,
        # who the caller is and whether it may, before anything else about the request
        dependencies=[Depends(auth_dependency(node.auth)), Depends(refuse_unknown_params)],
    )
    # before any route is added: routes that declare a body authenticate before parsing it
    app.router.route_class = authenticating_route_class(node.auth)
    install_error_handlers(app)
    app.add_middleware(BodyLimitMiddleware, max_bytes=node.config.limits.max_request_bytes)
    services = services or ConsumerServices.for_node(node)
    cursors, groups = services.cursors, services.groups
    install_stream_routes(app, node)
    install_record_routes(app, node, cursors, services.lake)
    install_cluster_routes(app, node)
    install_health_routes(app, node, groups.refresh_lag_metrics)
    install_auth_routes(app, node, node.auth)
    install_encryption_routes(app, node)
    install_activity_routes(app, node)
    install_cursor_routes(app, cursors, groups.refuse_if_managed)
    install_group_routes(app, node, groups)
    install_schema_routes(app, node.schemas, node.auth)
    app.state.closers = [groups.close]
    return app


async def close_app(app: FastAPI) -> None:
    """Stop what the routes started in the background (the group session expiry task)."""
    for close in app.state.closers:
        await close()
