"""Cursors on the node: where each lives, who serves it, and the lazy ``__cursors`` stream.

Any node accepts a cursor request. The node that leads the cursor's ``__cursors`` partition
serves it from its ``CursorStore``; any other node forwards it once to that leader (marked
with ``Liftlog-Forwarded``, so a leader that moved meanwhile answers 421 instead of forwarding
again). ``__cursors`` itself is created by the first cursor request, over the brokers live then.
"""

from __future__ import annotations

import asyncio
import logging
import time
from urllib.parse import quote

from coordinator.znodes import NO_LEADER, StreamRecord
from ingest.admin.node_view import NodeView
from ingest.groups.cursor_store import CursorStore, open_cursor_store
from ingest.peer_calls import call_peer
from ingest.replica.replica import PartitionReplica
from ingest.security.node_credentials import outgoing_credentials
from spark_log.api_models import CursorDeleted, CursorView
from spark_log.client.rest import RestClient
from spark_log.cursor_record import (
    CursorValue,
    cursor_key,
    cursors_partition,
    validate_cursor_id,
    validate_cursor_offset,
)
from spark_log.errors import (
    CursorNotFoundError,
    NotLeaderError,
    PartitionNotFoundError,
    StreamExistsError,
    StreamNotFoundError,
    UnavailableError,
)
from spark_log.json_types import JsonObject, JsonValue
from spark_log.stream_spec import CURSORS_STREAM, StreamSpec, internal_subject

log = logging.getLogger("liftlog.cursors")

HEADER_FORWARDED = "Liftlog-Forwarded"
ROUTE_RETRY_S = 0.05
FORWARD_TIMEOUT_S = 30.0


class CursorService:
    """One per node: the cursor stores of the ``__cursors`` partitions it leads."""

    def __init__(self, node: NodeView) -> None:
        self._node = node
        self._record: StreamRecord | None = None
        self._stores: dict[int, CursorStore] = {}
        self._loading: dict[int, asyncio.Lock] = {}
        self._broker_urls: dict[int, str] = {}  # refreshed when a leader is not in it

    async def fetch(
        self, stream: str, partition: int, cursor_id: str, *, forwarded: bool
    ) -> CursorView:
        """The cursor, or CursorNotFoundError when it was never set (or was deleted)."""
        created_at = await self._check_target(stream, partition, cursor_id)
        target = await self.route(cursor_id, forwarded)
        if isinstance(target, str):
            path = _cursor_path(stream, partition, cursor_id)
            return CursorView.from_json(await self._forward(target, "GET", path))
        value = target.get(cursor_key(cursor_id, stream, partition))
        if value is None or value.stream_created_at_ms != created_at:
            raise CursorNotFoundError(f"cursor {cursor_id!r} was never set on {stream}/{partition}")
        return CursorView(stream, partition, cursor_id, value.offset, value.set_at_ms)

    async def set(
        self, stream: str, partition: int, cursor_id: str, offset: int, *, forwarded: bool
    ) -> CursorView:
        """Store ``offset`` (the last offset processed) once the ``__cursors`` ISR has it."""
        validate_cursor_offset(offset)
        created_at = await self._check_target(stream, partition, cursor_id)
        target = await self.route(cursor_id, forwarded)
        if isinstance(target, str):
            path = _cursor_path(stream, partition, cursor_id)
            body = await self._forward(target, "PUT", path, {"offset": offset})
            return CursorView.from_json(body)
        value = CursorValue(offset, created_at, int(time.time() * 1000))
        await target.put(cursor_key(cursor_id, stream, partition), value)
        return CursorView(stream, partition, cursor_id, offset, value.set_at_ms)

    async def delete(
        self, stream: str, partition: int, cursor_id: str, *, forwarded: bool
    ) -> CursorDeleted:
        """Write a tombstone: the cursor reads as never set again."""
        await self._check_target(stream, partition, cursor_id)
        target = await self.route(cursor_id, forwarded)
        if isinstance(target, str):
            path = _cursor_path(stream, partition, cursor_id)
            return CursorDeleted.from_json(await self._forward(target, "DELETE", path))
        await target.put(cursor_key(cursor_id, stream, partition), None)
        return CursorDeleted(stream, partition, cursor_id)

    async def _check_target(self, stream: str, partition: int, cursor_id: str) -> int:
        """The cursor's stream partition exists: returns the stream's creation time."""
        validate_cursor_id(cursor_id)
        record = await self._stream_record(stream)
        if not 0 <= partition < record.spec.partitions:
            raise PartitionNotFoundError(
                f"stream {stream!r} has no partition {partition} "
                f"(partitions: {record.spec.partitions})"
            )
        return record.created_at_ms

    async def route(self, cursor_id: str, forwarded: bool) -> CursorStore | str:
        """This node's store for the cursor's partition, or the leader's API URL to forward
        to; waits (bounded) for a partition that has no leader yet."""
        record = await self._cursors_record()
        partition = cursors_partition(cursor_id, record.spec.partitions)
        return await self.route_partition(partition, forwarded)

    async def partitions(self) -> int:
        """How many partitions ``__cursors`` has (created on first use)."""
        return (await self._cursors_record()).spec.partitions

    async def route_partition(self, partition: int, forwarded: bool) -> CursorStore | str:
        """``route`` for one ``__cursors`` partition (a listing visits every one)."""
        timeout_s = self._node.config.cursors.load_timeout_s
        deadline = time.monotonic() + timeout_s
        while True:
            replica = self._led_replica(partition)
            if replica is not None:
                return await self._store(partition, replica)
            url = await self._leader_url(partition)
            if url is not None:
                if forwarded:
                    raise NotLeaderError(
                        f"broker {self._node.config.broker_id} does not lead "
                        f"{CURSORS_STREAM}/{partition}; ask its leader"
                    )
                return url
            if time.monotonic() >= deadline:
                raise UnavailableError(
                    f"{CURSORS_STREAM}/{partition} has had no leader for {timeout_s:g} s"
                )
            await self._node.reconcile_now()
            await asyncio.sleep(ROUTE_RETRY_S)

    def _led_replica(self, partition: int) -> PartitionReplica | None:
        try:
            replica = self._node.replicas.replica(CURSORS_STREAM, partition)
        except (NotLeaderError, StreamNotFoundError):
            return None
        return replica if replica.state.is_leader else None

    async def _stream_record(self, stream: str) -> StreamRecord:
        """The stream as this node's last reconcile saw it (its ZooKeeper watch keeps that
        current), else as ZooKeeper holds it (a stream created a moment ago)."""
        view = self._node.replicas.streams.get(stream)
        if view is not None:
            return view.record
        return await asyncio.to_thread(self._node.store.get, stream)

    async def _leader_url(self, partition: int) -> str | None:
        """Another live broker leading the partition (None: none yet, or it is this node,
        which has not taken the role yet). The leader comes from this node's reconciled view
        of ``__cursors``, refreshed from ZooKeeper when that view has none."""
        view = self._node.replicas.streams.get(CURSORS_STREAM)
        state = view.states.get(partition) if view is not None else None
        if state is None or state.leader == NO_LEADER:
            states = await asyncio.to_thread(self._node.store.partition_states, CURSORS_STREAM)
            state, _version = states[partition]
        if state.leader in (NO_LEADER, self._node.config.broker_id):
            return None
        if state.leader not in self._broker_urls:
            live = await self._node.live_brokers()
            self._broker_urls = {b.broker_id: b.api_url for b in live}
        return self._broker_urls.get(state.leader)

    async def _store(self, partition: int, replica: PartitionReplica) -> CursorStore:
        """The store of this leadership: loaded once per leader epoch, by one caller."""
        lock = self._loading.setdefault(partition, asyncio.Lock())
        async with lock:
            store = self._stores.get(partition)
            if store is None or store.replica is not replica or not store.current:
                config = self._node.config
                store = await open_cursor_store(
                    replica, config.cursors, config.ingest.max_fetch_bytes
                )
                self._stores[partition] = store
            return store

    async def _cursors_record(self) -> StreamRecord:
        if self._record is None:
            self._record = await self._find_or_create()
        return self._record

    async def _find_or_create(self) -> StreamRecord:
        store = self._node.store
        try:
            return await asyncio.to_thread(store.get, CURSORS_STREAM)
        except StreamNotFoundError:
            pass
        spec = await self._cursors_spec()
        try:
            _created, record = await asyncio.to_thread(store.create, spec)
        except StreamExistsError:  # another node created it over another broker count
            record = await asyncio.to_thread(store.get, CURSORS_STREAM)
        await self._node.reconcile_now()
        return record

    async def _cursors_spec(self) -> StreamSpec:
        config = self._node.config.cursors
        brokers = len(await self._node.live_brokers())
        factor = max(1, min(config.replication_factor, brokers))
        if factor < config.replication_factor:
            log.warning(
                "%s created with replication factor %d (%d broker(s) live); "
                "add replicas later with `liftlog stream reassign`",
                CURSORS_STREAM,
                factor,
                brokers,
            )
        return StreamSpec(
            name=CURSORS_STREAM,
            subject=internal_subject(CURSORS_STREAM),
            partitions=config.partitions,
            replication_factor=factor,
            ack_policy="all",
            internal=True,
        )

    async def _forward(
        self, url: str, method: str, path: str, body: JsonObject | None = None
    ) -> JsonValue:
        client = RestClient(url, FORWARD_TIMEOUT_S, outgoing_credentials(self._node.config))
        try:
            response = await call_peer(
                client.request, method, path, json_body=body, headers={HEADER_FORWARDED: "1"}
            )
        except UnavailableError:
            self._broker_urls = {}  # the leader moved or restarted elsewhere: ask again
            raise
        return response.json()


def _cursor_path(stream: str, partition: int, cursor_id: str) -> str:
    return f"/v1/streams/{stream}/partitions/{partition}/cursors/{quote(cursor_id, safe='')}"
