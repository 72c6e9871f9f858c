"""``/v1/cluster``: the live brokers and the controller, and the moves off a broker (its
leadership in a controlled shutdown, every replica in a decommission).

A controlled shutdown is answered by the controller (another node forwards it); a
decommission submits reassignments, which the controller carries out like any other.
"""

from __future__ import annotations

from fastapi import FastAPI

from ingest.admin import decommission
from ingest.admin.node_view import NodeView
from ingest.api.models import ControlledShutdown, Decommission
from spark_log.api_models import (
    BrokerInfo,
    ClusterInfo,
    ControlledShutdownResult,
    DecommissionPlan,
)


def install_cluster_routes(app: FastAPI, node: NodeView) -> None:
    @app.get("/v1/cluster", tags=["cluster"], response_model=ClusterInfo)
    async def cluster() -> ClusterInfo:
        """The live brokers (with their REST and NATS URLs and Liftbridge gRPC addresses)
        and the controller's id."""
        brokers = await node.live_brokers()
        return ClusterInfo(
            brokers=tuple(
                BrokerInfo(b.broker_id, b.host, b.api_url, b.nats_url, b.liftbridge_address)
                for b in brokers
            ),
            controller=await node.controller_id(),
            this_broker=node.config.broker_id,
            auth="enabled" if node.auth.enabled else "disabled",
        )

    @app.post(
        "/v1/cluster/controlled-shutdown",
        tags=["cluster"],
        response_model=ControlledShutdownResult,
    )
    async def controlled_shutdown(body: ControlledShutdown) -> ControlledShutdownResult:
        """Move leadership off a broker (answered by the controller; others forward)."""
        remaining = await node.request_controlled_shutdown(body.broker_id)
        return ControlledShutdownResult(body.broker_id, remaining)

    @app.post("/v1/cluster/decommission", tags=["cluster"], response_model=DecommissionPlan)
    async def decommission_broker(body: Decommission) -> DecommissionPlan:
        """Move every replica off a broker (reassignments onto the other live brokers,
        spread evenly); with dry_run, only the plan."""
        return await decommission.decommission(node, body.broker_id, body.dry_run)
