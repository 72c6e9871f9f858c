"""Admin operations shared by the REST routes: stream create/list/describe/delete/pause.

ZooKeeper is the source of truth; after a change this node reconciles at once so that a
client that gets a 201 can publish immediately.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from coordinator.znodes import StreamRecord
from spark_log.errors import NotLeaderError, StreamNotFoundError
from spark_log.stream_spec import StreamSpec

if TYPE_CHECKING:
    from ingest.node import IngestNode


async def create_stream(node: IngestNode, spec: StreamSpec) -> tuple[bool, dict[str, Any]]:
    created, _record = await asyncio.to_thread(node.store.create, spec)
    await node.reconcile_now()
    return created, await describe_stream(node, spec.name)


async def delete_stream(node: IngestNode, name: str) -> None:
    await asyncio.to_thread(node.store.delete, name)
    await node.reconcile_now()


async def set_paused(node: IngestNode, name: str, paused: bool) -> dict[str, Any]:
    await asyncio.to_thread(node.store.set_paused, name, paused)
    await node.reconcile_now()
    return await describe_stream(node, name)


async def list_streams(node: IngestNode) -> list[dict[str, Any]]:
    records = await asyncio.to_thread(node.store.list)
    return [stream_summary(r) for r in records]


async def describe_stream(node: IngestNode, name: str) -> dict[str, Any]:
    record = await asyncio.to_thread(node.store.get, name)
    states = await asyncio.to_thread(node.store.partition_states, name)
    body = stream_summary(record)
    body["spec"] = record.spec.to_json()  # "partitions" below becomes the per-partition list
    body["partitions"] = [
        _describe_partition(node, name, p, state) for p, (state, _version) in sorted(states.items())
    ]
    return body


async def flush_stream(node: IngestNode, name: str) -> dict[str, Any]:
    """fsync every partition of the stream led here and checkpoint its HW."""
    record = await asyncio.to_thread(node.store.get, name)
    flushed = []
    for p in range(record.spec.partitions):
        try:
            replica = node.replicas.replica(name, p)
        except NotLeaderError:
            continue
        await asyncio.to_thread(replica.log.flush)
        await asyncio.to_thread(replica.log.checkpoint_high_watermark)
        flushed.append(p)
    return {"stream": name, "flushed_partitions": flushed}


def stream_summary(record: StreamRecord) -> dict[str, Any]:
    return {**record.spec.to_json(), "paused": record.paused, "created_at_ms": record.created_at_ms}


def _describe_partition(node: IngestNode, name: str, p: int, state: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "partition": p,
        "leader": state.leader,
        "leader_epoch": state.leader_epoch,
        "replicas": list(state.replicas),
        "isr": list(state.isr),
        "high_watermark": None,
        "log_end_offset": None,
        "log_start_offset": None,
        "lake_offset": None,
        "offline": not state.isr,
    }
    try:
        replica = node.replicas.replica(name, p)
    except (NotLeaderError, StreamNotFoundError):
        return body
    log_ = replica.open_log
    if log_ is not None:
        body.update(
            high_watermark=log_.high_watermark,
            log_end_offset=log_.log_end_offset,
            log_start_offset=log_.log_start_offset,
        )
    body["offline"] = body["offline"] or replica.offline_reason is not None
    return body
