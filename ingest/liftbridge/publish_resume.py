"""A publish resumes a paused stream, as a Liftbridge publish resumes a paused partition.

Liftbridge's PauseStream means "paused until the next publish": its clients pause idle streams
and expect the next publish to be stored. Liftlog's pause is the operator's and refuses
publishes, so a gRPC publish resumes the stream only for a caller who may pause it (with
authorization off: anyone, as on Liftbridge); anyone else gets ``stream_paused``. Liftlog
pauses whole streams, so the whole stream resumes. Concurrent publishes share one resume.
"""

from __future__ import annotations

import asyncio

from ingest.admin import streams as admin
from ingest.admin.node_view import NodeView
from ingest.liftbridge.calls import RpcCall
from ingest.liftbridge.publish_checks import PublishTarget
from spark_log.auth import Action, stream_resource
from spark_log.errors import StreamPausedError

_resuming: dict[str, asyncio.Task[None]] = {}


async def resume_if_paused(call: RpcCall, target: PublishTarget) -> None:
    """Resume the stream ``target`` is in when the operator paused it (and the caller may)."""
    name = target.spec.name
    if not target.record.paused:
        return
    if not call.allows(Action.RESUME, stream_resource(name)):
        raise StreamPausedError(
            f"stream {name} is paused; a publish resumes it only for a caller allowed to resume it"
        )
    task = _resuming.get(name)
    if task is None:
        task = asyncio.ensure_future(_resume(call.node, name))
        _resuming[name] = task
        task.add_done_callback(lambda _done: _resuming.pop(name, None))
    await asyncio.shield(task)


async def _resume(node: NodeView, name: str) -> None:
    await admin.set_paused(node, name, False)
