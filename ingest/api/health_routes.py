"""``/healthz``, ``/readyz`` and ``/metrics``: what a process supervisor, a load balancer and
Prometheus ask a node.

The probes need no credential (``route_acl.OPEN``), so they say nothing about the streams.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Response

from ingest.admin.node_view import NodeView
from spark_log.api_models import HealthStatus
from spark_log.errors import UnavailableError


def install_health_routes(
    app: FastAPI, node: NodeView, refresh: Callable[[], Awaitable[None]]
) -> None:
    """``refresh`` runs before each scrape renders (metrics computed on demand: group lag)."""

    @app.get("/healthz", tags=["health"], response_model=HealthStatus)
    async def healthz() -> HealthStatus:
        """The process is up and serving."""
        return HealthStatus("ok")

    @app.get("/readyz", tags=["health"], response_model=HealthStatus)
    async def readyz() -> HealthStatus:
        """Registered in ZooKeeper, connected to NATS and hosting its replicas."""
        if not node.ready:
            raise UnavailableError("node is starting or stopping")
        if node.nc is None or not node.nc.is_connected:
            raise UnavailableError("not connected to NATS")
        return HealthStatus("ready")

    @app.get("/metrics", tags=["health"])
    async def metrics() -> Response:
        await refresh()
        return Response(node.metrics.render(), media_type="text/plain; version=0.0.4")
