"""What the REST routes and admin operations need from the ingest node, as a Protocol.

``ingest.node`` serves the API (it imports ``ingest.api``), so the API and ``ingest.admin.streams``
must not import ``ingest.node`` back, not even for type hints: they name this view instead,
and ``IngestNode`` satisfies it structurally.
"""

from __future__ import annotations

from typing import Protocol

from nats.aio.client import Client as NatsClient

from coordinator.controller import Controller
from coordinator.schemas.registry import SchemaRegistry
from coordinator.streams import StreamStore
from coordinator.zk import ZkSession
from coordinator.znodes import BrokerInfo
from ingest.metrics import NodeMetrics
from ingest.replica.manager import ReplicaManager
from ingest.security.node_auth import NodeAuth
from spark_log.config import NodeConfig


class NodeView(Protocol):
    """The node's state and operations the API layer uses."""

    config: NodeConfig
    metrics: NodeMetrics
    store: StreamStore
    zk: ZkSession
    replicas: ReplicaManager
    controller: Controller
    nc: NatsClient | None
    ready: bool
    auth: NodeAuth
    schemas: SchemaRegistry

    async def live_brokers(self) -> list[BrokerInfo]: ...

    async def controller_id(self) -> int | None: ...

    async def controller_api_url(self) -> str | None: ...

    async def reconcile_now(self) -> None: ...

    async def request_controlled_shutdown(self, broker_id: int) -> int: ...
