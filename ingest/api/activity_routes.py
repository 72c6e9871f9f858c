"""``/v1/cluster/activity``: switch the activity stream on or off, and see its state.

Switching it on creates ``__activity`` (one partition, replication factor up to 3 over the
brokers live then, acks=all); from then on every stream create, delete, pause, resume,
read-only switch and alter, and every consumer-group join and leave, is appended to it in
order with a strictly increasing ``id`` (docs/consumers.md#the-activity-stream).
"""

from __future__ import annotations

import asyncio
import logging

from fastapi import FastAPI

from ingest.admin.node_view import NodeView
from ingest.api.models import ActivitySwitch
from spark_log.api_models import ActivityStatus
from spark_log.errors import StreamExistsError
from spark_log.stream_spec import ACTIVITY_STREAM, StreamSpec, internal_subject

log = logging.getLogger("liftlog.activity")

ACTIVITY_REPLICATION_FACTOR = 3


def install_activity_routes(app: FastAPI, node: NodeView) -> None:
    @app.get("/v1/cluster/activity", tags=["cluster"], response_model=ActivityStatus)
    async def activity_status() -> ActivityStatus:
        """Whether admin operations are recorded, and how many are still queued."""
        return await status(node)

    @app.put("/v1/cluster/activity", tags=["cluster"], response_model=ActivityStatus)
    async def switch_activity(body: ActivitySwitch) -> ActivityStatus:
        """Record admin operations in ``__activity`` (created now if needed), or stop."""
        if body.enabled:
            await ensure_activity_stream(node)
        await asyncio.to_thread(node.store.activity.set_enabled, body.enabled)
        return await status(node)


async def status(node: NodeView) -> ActivityStatus:
    activity = node.store.activity
    enabled = await asyncio.to_thread(activity.enabled)
    pending = await asyncio.to_thread(activity.pending)
    return ActivityStatus(enabled, ACTIVITY_STREAM, len(pending))


async def ensure_activity_stream(node: NodeView) -> None:
    brokers = len(await node.live_brokers())
    spec = StreamSpec(
        name=ACTIVITY_STREAM,
        subject=internal_subject(ACTIVITY_STREAM),
        partitions=1,
        replication_factor=max(1, min(ACTIVITY_REPLICATION_FACTOR, brokers)),
        ack_policy="all",
        internal=True,
    )
    try:
        await asyncio.to_thread(node.store.create, spec)
    except StreamExistsError:  # created before over another broker count: keep it
        log.info("%s exists already", ACTIVITY_STREAM)
    await node.reconcile_now()
