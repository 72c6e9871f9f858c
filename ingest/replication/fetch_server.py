"""The leader's side of replication: answer follower fetches and leader-epoch queries.

A fetch at offset o records that the follower holds everything below o (the fetch is the ack),
which may advance the HW; the answer is the leader's batches from o, unchanged. Requests from a
follower with another leader epoch are refused both ways (fencing): an older epoch means the
follower has not seen the election yet, a newer one means this leader is a zombie.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Protocol, runtime_checkable

import nats.errors
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from ingest.metrics import NodeMetrics
from ingest.replication.partition_state import Partition
from ingest.replication.tail_cache import TailCache
from spark_log.errors import InvalidRequestError, LiftlogError
from spark_log.fetch_wire import (
    FENCED_LEADER_EPOCH,
    HEADER_FETCH_META,
    NOT_LEADER,
    OFFSET_OUT_OF_RANGE,
    UNKNOWN_LEADER_EPOCH,
    UNKNOWN_REPLICA,
    EpochRequest,
    EpochResponse,
    FetchMeta,
    FetchRequest,
    epoch_subject,
    fetch_subject,
)
from spark_log.log import PartitionLog

log = logging.getLogger("liftlog.fetch_server")

MAX_FOLLOWER_WAIT_MS = 5_000
FETCH_RESPONSE_OVERHEAD_BYTES = 4096


@runtime_checkable
class LeaderReplica(Protocol):
    """What a fetch server needs from the leader replica it serves."""

    @property
    def state(self) -> Partition: ...

    @property
    def log(self) -> PartitionLog: ...

    @property
    def open_log(self) -> PartitionLog | None: ...

    @property
    def tail_cache(self) -> TailCache: ...

    def track_task(self, task: asyncio.Task[object]) -> None: ...

    def record_follower_fetch(self, replica_id: int, fetch_offset: int) -> None: ...

    async def wait_for_append(self, wait_ms: int) -> None: ...


class FetchServer:
    """Subscribes the leader's fetch and epoch subjects for one partition."""

    def __init__(
        self,
        replica: LeaderReplica,
        nc: NatsClient,
        cluster: str,
        *,
        send_acks: Callable[[], None],
        metrics: NodeMetrics,
    ) -> None:
        """``send_acks`` publishes the acks a fetch released (it may move the HW)."""
        self._replica = replica
        self._state = replica.state
        self._send_acks = send_acks
        self._in_flight = metrics.replica_fetches_in_flight
        self._nc = nc
        self._cluster = cluster
        self._subs: list[Subscription] = []
        self._max_bytes = max(1024, int(nc.max_payload) - FETCH_RESPONSE_OVERHEAD_BYTES)

    async def start(self) -> None:
        me = self._state.broker_id
        name, p = self._state.stream, self._state.partition
        self._subs = [
            await self._nc.subscribe(fetch_subject(self._cluster, name, p, me), cb=self._on_fetch),
            await self._nc.subscribe(epoch_subject(self._cluster, name, p, me), cb=self._on_epoch),
        ]

    async def stop(self) -> None:
        subs, self._subs = self._subs, []
        for sub in subs:
            with contextlib.suppress(nats.errors.Error):
                await sub.unsubscribe()

    async def _on_fetch(self, msg: Msg) -> None:
        """Each fetch runs in its own task: a long-polling follower must not hold up others."""
        task = asyncio.ensure_future(self._answer_counted(msg))
        self._replica.track_task(task)

    async def _answer_counted(self, msg: Msg) -> None:
        self._in_flight.inc()
        try:
            await self._answer_fetch(msg)
        finally:
            self._in_flight.dec()

    async def _answer_fetch(self, msg: Msg) -> None:
        r = self._replica
        try:
            req = FetchRequest.decode(msg.data)
        except InvalidRequestError as exc:
            await self._respond(msg, self._meta(error="invalid_request", message=exc.message))
            return
        refusal = self._refusal(req.replica_id, req.leader_epoch)
        if refusal is not None:
            await self._respond(msg, self._meta(error=refusal[0], message=refusal[1]))
            return
        log_ = r.log
        if req.fetch_offset > log_.log_end_offset or req.fetch_offset < log_.log_start_offset:
            await self._respond(
                msg,
                self._meta(
                    error=OFFSET_OUT_OF_RANGE,
                    message=f"fetch offset {req.fetch_offset} outside "
                    f"[{log_.log_start_offset}, {log_.log_end_offset}]",
                ),
            )
            return
        r.record_follower_fetch(req.replica_id, req.fetch_offset)
        if req.fetch_offset == log_.log_end_offset and req.wait_ms > 0:
            self._send_acks()  # a fetch that moved the HW completes acks=all requests now
            await r.wait_for_append(min(req.wait_ms, MAX_FOLLOWER_WAIT_MS))
            data = await self._read(req)
            await self._respond(msg, self._meta(), data)
        else:
            # the follower's next round first, then the acks this fetch released
            data = await self._read(req)
            await self._respond(msg, self._meta(), data)
            self._send_acks()

    async def _read(self, req: FetchRequest) -> bytes:
        log_ = self._replica.open_log
        if log_ is None or req.fetch_offset >= log_.log_end_offset:
            return b""
        max_bytes = min(req.max_bytes, self._max_bytes)
        cached = self._replica.tail_cache.read(req.fetch_offset, max_bytes)
        if cached is not None:
            return cached
        try:
            data = await asyncio.get_running_loop().run_in_executor(
                None, log_.read, req.fetch_offset, max_bytes
            )
        except LiftlogError as exc:
            log.warning("fetch read failed: %s", exc.message)
            return b""
        if len(data) > self._max_bytes:
            log.error("a batch of %d bytes exceeds the NATS max payload; not sent", len(data))
            return b""
        return data

    def _refusal(self, replica_id: int, leader_epoch: int) -> tuple[str, str] | None:
        state = self._state
        if not state.is_leader:
            return NOT_LEADER, f"broker {state.broker_id} no longer leads"
        if replica_id not in state.replicas or replica_id == state.broker_id:
            return UNKNOWN_REPLICA, f"broker {replica_id} is not a follower of this partition"
        if leader_epoch < state.leader_epoch:
            return FENCED_LEADER_EPOCH, f"epoch {leader_epoch} < leader epoch {state.leader_epoch}"
        if leader_epoch > state.leader_epoch:
            return UNKNOWN_LEADER_EPOCH, f"epoch {leader_epoch} > leader epoch {state.leader_epoch}"
        return None

    def _meta(self, error: str | None = None, message: str | None = None) -> FetchMeta:
        log_ = self._replica.open_log
        return FetchMeta(
            leader_epoch=self._state.leader_epoch,
            high_watermark=log_.high_watermark if log_ else 0,
            log_start_offset=log_.log_start_offset if log_ else 0,
            log_end_offset=log_.log_end_offset if log_ else 0,
            error=error,
            message=message,
        )

    async def _respond(self, msg: Msg, meta: FetchMeta, data: bytes = b"") -> None:
        if not msg.reply:
            return
        with contextlib.suppress(nats.errors.Error, OSError):
            await self._nc.publish(msg.reply, data, headers={HEADER_FETCH_META: meta.encode()})

    async def _on_epoch(self, msg: Msg) -> None:
        """KIP-279 OffsetsForLeaderEpoch: the end offset of the follower's latest epoch."""
        try:
            req = EpochRequest.decode(msg.data)
        except InvalidRequestError as exc:
            resp = EpochResponse(-1, -1, "invalid_request", exc.message)
        else:
            refusal = self._refusal(req.replica_id, req.leader_epoch)
            if refusal is not None:
                resp = EpochResponse(-1, -1, *refusal)
            else:
                epoch, end = self._replica.log.end_offset_for_epoch(req.epoch)
                resp = EpochResponse(epoch, end)
        if msg.reply:
            with contextlib.suppress(nats.errors.Error, OSError):
                await self._nc.publish(msg.reply, resp.encode())
