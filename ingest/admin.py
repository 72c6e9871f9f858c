"""Admin operations shared by the REST routes: stream create/list/describe/delete/pause.

ZooKeeper is the source of truth; after a change this node reconciles at once so that a
client that gets a 201 can publish immediately.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from coordinator.znodes import NO_LEADER, StreamRecord
from spark_log.errors import LiftlogError, NotLeaderError
from spark_log.rest import RestClient
from spark_log.stream_spec import StreamSpec

if TYPE_CHECKING:
    from ingest.node import IngestNode

LEADER_VIEW_TIMEOUT_S = 2.0


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
    """The stream with every partition's state; offsets come from each partition's leader."""
    record = await asyncio.to_thread(node.store.get, name)
    states = await asyncio.to_thread(node.store.partition_states, name)
    api_urls = {b.broker_id: b.api_url for b in await node.live_brokers()}
    body = stream_summary(record)
    body["spec"] = record.spec.to_json()  # "partitions" below becomes the per-partition list
    body["partitions"] = [
        await _describe_partition(node, name, p, state, api_urls)
        for p, (state, _version) in sorted(states.items())
    ]
    return body


def local_partition_view(node: IngestNode, name: str, p: int) -> dict[str, Any]:
    """What this broker's replica knows (the leader also knows its followers' LEOs)."""
    replica = node.replicas.replica(name, p)
    log_ = replica.open_log
    view: dict[str, Any] = {
        "partition": p,
        "broker": node.config.broker_id,
        "role": replica.role,
        "leader_epoch": replica.leader_epoch,
        "high_watermark": log_.high_watermark if log_ else None,
        "log_end_offset": log_.log_end_offset if log_ else None,
        "log_start_offset": log_.log_start_offset if log_ else None,
        "offline": replica.offline_reason is not None,
        "fenced": replica.fenced_reason is not None,
    }
    if replica.is_leader and log_ is not None:
        leos = {str(r): leo for r, leo in replica.followers.log_end_offsets().items()}
        view["replica_log_end_offsets"] = {str(node.config.broker_id): log_.log_end_offset, **leos}
    return view


async def flush_stream(node: IngestNode, name: str) -> dict[str, Any]:
    """fsync every replica of the stream hosted here and checkpoint its HW."""
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


async def _describe_partition(
    node: IngestNode, name: str, p: int, state: Any, api_urls: dict[int, str]
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "partition": p,
        "leader": state.leader,
        "leader_epoch": state.leader_epoch,
        "replicas": list(state.replicas),
        "isr": list(state.isr),
        "high_watermark": None,
        "log_end_offset": None,
        "log_start_offset": None,
        "replica_log_end_offsets": {},
        "lake_offset": None,
        "offline": state.leader == NO_LEADER,
    }
    view = await _leader_view(node, name, p, state.leader, api_urls)
    if view is not None:
        for key in ("high_watermark", "log_end_offset", "log_start_offset"):
            body[key] = view[key]
        body["replica_log_end_offsets"] = view.get("replica_log_end_offsets", {})
        body["offline"] = body["offline"] or view["offline"]
    return body


async def _leader_view(
    node: IngestNode, name: str, p: int, leader: int, api_urls: dict[int, str]
) -> dict[str, Any] | None:
    if leader == node.config.broker_id:
        try:
            return local_partition_view(node, name, p)
        except LiftlogError:
            return None
    url = api_urls.get(leader)
    if url is None:
        return None
    try:
        return await asyncio.to_thread(
            RestClient(url, LEADER_VIEW_TIMEOUT_S).get_json, f"/v1/streams/{name}/partitions/{p}"
        )
    except LiftlogError:
        return None
