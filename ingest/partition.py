"""A partition replica hosted by this node: its log, and its role (leader or follower).

As leader it records the partition's NATS subject, serves follower fetches and advances the HW
to the minimum LEO of the ISR; as follower it fetches from the leader and appends the leader's
bytes. Exactly one task mutates the log at a time (the write lock): the leader's writer or the
follower's fetcher. Reads run concurrently in the executor, bounded by the HW.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats.errors
import pyarrow as pa
import pyarrow.compute as pc

from coordinator.znodes import NO_LEADER, PartitionState
from ingest.dedup import DedupWindow
from ingest.errors import ReplicaStoppedError
from ingest.exporter import ExportTarget, PartitionExporter, in_lake_thread
from ingest.fetch_server import FetchServer
from ingest.fetcher import ReplicaFetcher
from ingest.follower_state import FollowerTracker
from ingest.lake_identity import LakeIdentity
from ingest.leader import AckRouter, Sequencer, next_cycle, now_ms
from ingest.metrics import NodeMetrics
from ingest.produce_request import ProduceRequest, request_from_nats
from ingest.tail_cache import TailCache
from spark_log.config import NodeConfig
from spark_log.errors import (
    LiftlogError,
    NotLeaderError,
    OffsetOutOfRangeError,
    StorageError,
    StreamPausedError,
)
from spark_log.lake import LakeTable, configured_table_uri
from spark_log.log import PartitionLog, Record, decode_records, iter_batches, records_from_batches
from spark_log.log.fetch_table import table_from_batches
from spark_log.log.retention import RetentionLimits
from spark_log.stream_spec import StreamSpec
from spark_log.wire import HEADER_BATCH_COUNT, HEADER_MSG_ID, ack_prefix, encode_ack, encode_error

log = logging.getLogger("liftlog.partition")

Publish = Callable[[str, bytes], Awaitable[None]]
IsrWriter = Callable[[PartitionState, int, list[int]], Awaitable[tuple[PartitionState, int]]]
IDLE_WAKEUP_S = 0.2
ROLE_NONE = "none"
ROLE_LEADER = "leader"
ROLE_FOLLOWER = "follower"
ROLE_OFFLINE = "offline"


@dataclass(frozen=True)
class FetchResult:
    records: list[Record]
    high_watermark: int
    log_start_offset: int
    table: pa.Table | None = None
    """The records as one Arrow table (FETCH_SCHEMA) instead of ``records``, when asked."""


class PartitionReplica:
    """One stream partition's replica on this broker: leader, follower or offline."""

    def __init__(
        self,
        *,
        spec: StreamSpec,
        partition: int,
        directory: Path,
        config: NodeConfig,
        metrics: NodeMetrics,
        publish: Publish,
        leader_epoch: int,
        isr: list[int],
        replicas: tuple[int, ...] = (),
        leader_id: int | None = None,
        created_at_ms: int,
        lake_identity: LakeIdentity | None = None,
    ) -> None:
        self.spec = spec
        self._lake_identity = lake_identity
        self.partition = partition
        self.directory = directory
        self.created_at_ms = created_at_ms
        self.config = config
        self.leader_epoch = leader_epoch
        self.isr = list(isr)
        self.replicas = tuple(replicas) or (config.broker_id,)
        self.leader_id = config.broker_id if leader_id is None else leader_id
        self.role = ROLE_NONE
        self.state_version = -1
        self.fenced_reason: str | None = None
        self._controller_epoch = 0
        self.followers = FollowerTracker(config.broker_id, self.replicas)
        self.isr_writer: IsrWriter | None = None
        self._write_lock = asyncio.Lock()  # one log writer: the leader's writer or the fetcher
        self._fetcher: ReplicaFetcher | None = None
        self._fetch_server: FetchServer | None = None
        self._exporter: PartitionExporter | None = None
        self._metrics = metrics
        self._labels = (spec.name, str(partition))
        self._records_in = metrics.records_in.labels(*self._labels)
        self._bytes_in = metrics.bytes_in.labels(*self._labels)
        self._duplicates = metrics.duplicates.labels(*self._labels)
        self._publish = publish
        self._log: PartitionLog | None = None
        self._queue: list[ProduceRequest] = []
        self._wakeup = asyncio.Event()
        self._space = asyncio.Event()
        self._space.set()
        self._hw_event = asyncio.Event()
        self._leo_event = asyncio.Event()
        self.tail_cache = TailCache()
        self._tasks: set[asyncio.Task[None]] = set()
        self._dedup = DedupWindow(
            int(config.ingest.dedup_window_s * 1000), config.ingest.dedup_max_ids
        )
        self._acks = AckRouter(
            ack_prefix(spec.name, partition),
            self._queue_ack,
            encode_ack,
            self._encode_error,
        )
        self._sequencer = Sequencer(spec, self._dedup, self._refuse)
        self._writer: asyncio.Task[None] | None = None
        self._flusher: asyncio.Task[None] | None = None
        self._flush_wanted = asyncio.Event()
        self._stopping = False
        self._flushing = False
        self._outbox: list[tuple[str, bytes]] = []
        self._subscription: Any = None
        self.paused = False
        self.slow_consumer_drops = 0
        self._last_drop_log_s = 0.0
        self.offline_reason: str | None = None
        self._last_flush_ms = now_ms()
        self._last_hw_checkpoint_ms = now_ms()
        self._last_retention_ms = now_ms()

    # ----------------------------------------------------------------- lifecycle

    @property
    def log(self) -> PartitionLog:
        if self._log is None:
            raise ReplicaStoppedError(f"{self.spec.name}/{self.partition} is not open")
        return self._log

    @property
    def open_log(self) -> PartitionLog | None:
        """The log, or None once the replica is closed (describe must not raise then)."""
        return self._log

    async def open(self) -> None:
        """Open (and recover) the log, then rebuild the dedup window from its tail."""
        loop = asyncio.get_running_loop()
        self._log = await loop.run_in_executor(
            None, lambda: PartitionLog.open(self.directory, self.config.log)
        )
        self._update_gauges()
        name = f"{self.spec.name}-{self.partition}"
        self._writer = asyncio.create_task(self._run_writer(), name=f"writer-{name}")
        self._flusher = asyncio.create_task(self._run_flusher(), name=f"flusher-{name}")

    async def close(self) -> None:
        """Stop ingest, fail waiting requests, flush and close the log."""
        await self._leave_role()
        await self.unsubscribe()
        await self._stop_tasks()
        for task in list(self._tasks):
            task.cancel()
        self._fail_waiting(ReplicaStoppedError(f"{self.spec.name}/{self.partition} is closing"))
        await self._send_acks()
        if self._log is not None:
            log_ = self._log
            self._log = None
            await asyncio.get_running_loop().run_in_executor(None, log_.close)
        self._hw_event.set()

    async def _stop_tasks(self) -> None:
        """Let the writer and flusher finish the step they are in (never cancel a task in
        the middle of an executor append: the thread would go on writing after close)."""
        self._stopping = True
        self._wakeup.set()
        self._flush_wanted.set()
        tasks = [t for t in (self._writer, self._flusher) if t is not None]
        self._writer = self._flusher = None
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def delete(self) -> None:
        await self.close()
        await asyncio.get_running_loop().run_in_executor(
            None, lambda: shutil.rmtree(self.directory, ignore_errors=True)
        )

    async def subscribe(self, nc: Any) -> None:
        """Start recording the partition's subject (idempotent)."""
        if self._subscription is not None:
            return
        self._subscription = await nc.subscribe(
            self.spec.partition_subject(self.partition),
            queue=self.spec.queue_group or "",
            cb=self._on_message,
            pending_msgs_limit=self.config.ingest.pending_msgs_limit,
            pending_bytes_limit=self.config.ingest.pending_bytes_limit,
        )
        self.paused = False

    async def unsubscribe(self) -> None:
        sub, self._subscription = self._subscription, None
        if sub is not None:
            with contextlib.suppress(nats.errors.Error):  # the connection may be gone already
                await sub.unsubscribe()

    @property
    def subscribed(self) -> bool:
        return self._subscription is not None

    def owns_subscription(self, subscription: object) -> bool:
        return subscription is not None and subscription is self._subscription

    def count_slow_consumer_drop(self) -> bool:
        """Count a NATS drop; True when it should be logged (at most once a second)."""
        self.slow_consumer_drops += 1
        self._metrics.slow_consumer_drops.labels(*self._labels).inc()
        now = time.monotonic()
        if now - self._last_drop_log_s >= 1.0:
            self._last_drop_log_s = now
            return True
        return False

    # ----------------------------------------------------------------- roles

    @property
    def is_leader(self) -> bool:
        return self.role == ROLE_LEADER and self.fenced_reason is None

    def leads_at(self, leader_epoch: int) -> bool:
        """Leader, not fenced, not offline, and still at ``leader_epoch`` (the exporter's last
        check before a Delta commit; called from a lake thread, so it only reads fields)."""
        return self.is_leader and self.leader_epoch == leader_epoch and self.offline_reason is None

    @property
    def lake_table_uri(self) -> str | None:
        """The stream's Delta table, or None when the lake is disabled."""
        return configured_table_uri(self.config.lake, self.spec.name, self.created_at_ms)

    @property
    def lake_offset(self) -> int | None:
        """The first offset not in the lake, as this leader's exporter knows it (None on a
        follower, with the lake disabled, or before the exporter has read the table)."""
        return self._exporter.lake_offset if self._exporter is not None else None

    def track_task(self, task: asyncio.Task[Any]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @property
    def metrics(self) -> NodeMetrics:
        return self._metrics

    @property
    def log_write_in_progress(self) -> bool:
        return self._write_lock.locked()

    async def apply_state(
        self, state: PartitionState, version: int, nc: Any, paused: bool, cluster: str
    ) -> None:
        """Take the role ZooKeeper gives this broker; a new leader epoch always re-enters it."""
        me = self.config.broker_id
        if state.leader == me:
            role = ROLE_LEADER
        elif state.leader == NO_LEADER:
            role = ROLE_OFFLINE
        else:
            role = ROLE_FOLLOWER
        same = role == self.role and state.leader_epoch == self.leader_epoch
        self.state_version = version
        self.isr = list(state.isr)
        self.replicas = tuple(state.replicas)
        self._controller_epoch = state.controller_epoch
        if same:
            if role == ROLE_LEADER:
                await self._sync_subscription(nc, paused)
                self._advance_hw()
            return
        await self._leave_role()
        self.leader_epoch = state.leader_epoch
        self.leader_id = state.leader
        self.role = role
        if role == ROLE_LEADER:
            await self._become_leader(nc, paused, cluster)
        elif role == ROLE_FOLLOWER:
            self._fetcher = ReplicaFetcher(self, nc, cluster)
            self._fetcher.start()
        log.info(
            "%s/%d: %s at leader epoch %d (leader %d, ISR %s)",
            self.spec.name,
            self.partition,
            role,
            state.leader_epoch,
            state.leader,
            list(state.isr),
        )

    async def _become_leader(self, nc: Any, paused: bool, cluster: str) -> None:
        log_ = self.log
        self.tail_cache.clear()
        self.followers.reset(self.config.broker_id, self.replicas, now_ms())
        if self.isr == [self.config.broker_id]:
            log_.set_high_watermark(log_.log_end_offset)
        await asyncio.get_running_loop().run_in_executor(None, self._rebuild_dedup)
        self._fetch_server = FetchServer(self, nc, cluster)
        await self._fetch_server.start()
        await self._sync_subscription(nc, paused)
        self._start_exporter()
        self._update_gauges()

    def _start_exporter(self) -> None:
        """Export this leadership's committed records to the lake; everything already in the
        log counts as overdue (its size and age were not tracked here)."""
        uri = self.lake_table_uri
        if uri is None:
            return
        target = ExportTarget(
            self.spec.name, self.partition, uri, self.config.broker_id, self.leader_epoch
        )
        self._exporter = PartitionExporter(
            self,
            target,
            self.config.lake,
            self._metrics,
            self.log.log_end_offset,
            self._lake_identity,
        )
        self._exporter.start()

    async def _sync_subscription(self, nc: Any, paused: bool) -> None:
        if paused and not self.paused:
            await self.unsubscribe()
            self.paused = True
        elif not paused and not self.subscribed:
            await self.subscribe(nc)

    async def _leave_role(self) -> None:
        """Stop what the old role did; a deposed leader fails everything it had not acked."""
        if self.role == ROLE_LEADER:
            await self.unsubscribe()
            if self._exporter is not None:
                exporter, self._exporter = self._exporter, None
                await exporter.stop(self._not_leader_error())
            if self._fetch_server is not None:
                await self._fetch_server.stop()
                self._fetch_server = None
            async with self._write_lock:  # the writer's cycle in progress completes first
                self._fail_waiting(self._not_leader_error())
            await self._send_acks()
        if self._fetcher is not None:
            await self._fetcher.stop()
            self._fetcher = None
        self.role = ROLE_NONE

    def _not_leader_error(self) -> NotLeaderError:
        return NotLeaderError(
            f"broker {self.config.broker_id} no longer leads {self.spec.name}/{self.partition}"
        )

    def fence(self, reason: str | None) -> None:
        """Stop (reason) or resume (None) acknowledging: the ZooKeeper session is in doubt."""
        if reason is not None and self.fenced_reason is None and self.role == ROLE_LEADER:
            log.warning("%s/%d: fenced, no more acks: %s", self.spec.name, self.partition, reason)
            self._acks.purgatory.fail_all(NotLeaderError(reason))
        self.fenced_reason = reason

    # ----------------------------------------------------------------- replication

    def record_follower_fetch(self, replica_id: int, fetch_offset: int) -> None:
        self.followers.record_fetch(replica_id, fetch_offset, self.log.log_end_offset, now_ms())
        self.tail_cache.trim_below(self.followers.min_log_end_offset())
        self._advance_hw()

    async def wait_for_append(self, wait_ms: int) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._leo_event.wait(), wait_ms / 1000)

    def _signal_append(self) -> None:
        self._leo_event.set()
        self._leo_event = asyncio.Event()

    async def append_replicated(self, data: bytes) -> None:
        """Append the leader's batches as they are (CRC verified), durable per the policy."""
        batches = [view for _header, view in iter_batches(data, verify=False)]
        sync = self.config.log.fsync == "always"

        def append(log_: PartitionLog) -> None:
            log_.append_many(batches)
            if sync:
                log_.flush()

        async with self._write_lock:
            await asyncio.get_running_loop().run_in_executor(None, append, self.log)
        self._update_gauges()

    def follow_high_watermark(self, leader_hw: int) -> None:
        log_ = self.log
        hw = min(leader_hw, log_.log_end_offset)
        if hw > log_.high_watermark:
            log_.set_high_watermark(hw)
            self._signal_hw()

    async def truncate_to(self, offset: int) -> None:
        async with self._write_lock:
            await asyncio.get_running_loop().run_in_executor(None, self.log.truncate_to, offset)
        self.tail_cache.clear()
        self._dedup.forget_from(offset)
        self._update_gauges()

    def fail_replication(self, reason: str) -> None:
        self._go_offline(f"replication failed: {reason}")

    async def _maintain_isr(self) -> None:
        """Leader: shrink lagging followers out, expand caught-up ones in (ZooKeeper first)."""
        if not self.is_leader or self.isr_writer is None or len(self.replicas) < 2:
            return
        now = now_ms()
        max_lag_ms = int(self.config.replica_lag_time_max_s * 1000)
        lagging = self.followers.lagging(self.isr, now, max_lag_ms)
        returning = self.followers.caught_up(self.isr, self.log.high_watermark, now, max_lag_ms)
        if not lagging and not returning:
            return
        new_isr = sorted((set(self.isr) - set(lagging)) | set(returning))
        expected = PartitionState(
            leader=self.config.broker_id,
            leader_epoch=self.leader_epoch,
            isr=tuple(self.isr),
            replicas=self.replicas,
            controller_epoch=self._controller_epoch,
        )
        try:
            state, version = await self.isr_writer(expected, self.state_version, new_isr)
        except LiftlogError as exc:
            log.warning(
                "%s/%d: ISR change to %s refused (%s): fencing until re-read",
                self.spec.name,
                self.partition,
                new_isr,
                exc.message,
            )
            self.fence(f"ISR write failed: {exc.message}")
            return
        log.info("%s/%d: ISR %s -> %s", self.spec.name, self.partition, self.isr, list(state.isr))
        self.isr = list(state.isr)
        self.state_version = version
        self._advance_hw()

    # ----------------------------------------------------------------- produce

    async def _on_message(self, msg: Any) -> None:
        """NATS callback: queue only; the writer task parses and validates."""
        if len(self._queue) >= self.config.ingest.pending_msgs_limit:
            self._space.clear()
            await (
                self._space.wait()
            )  # back-pressure: the client queue fills, then drops are counted
        try:
            req = request_from_nats(msg.subject, msg.reply, msg.data, msg.headers, self.spec)
        except LiftlogError as exc:
            self._refuse_reply(msg.reply, exc)
            return
        self._queue.append(req)
        self._wakeup.set()

    async def produce(self, requests: list[ProduceRequest]) -> list[tuple[int, int]]:
        """Append requests that did not come from NATS (REST publishes); wait for their acks."""
        if not self.is_leader:
            raise NotLeaderError(
                f"broker {self.config.broker_id} does not lead {self.spec.name}/{self.partition}"
                f" (leader: {self.leader_id})"
            )
        if self.paused:
            raise StreamPausedError(f"stream {self.spec.name} is paused")
        self._raise_if_offline()
        loop = asyncio.get_running_loop()
        for req in requests:
            req.future = loop.create_future()
            self._queue.append(req)
        self._wakeup.set()
        return [await req.future for req in requests if req.future is not None]

    def _encode_error(self, exc: LiftlogError) -> bytes:
        return encode_error(exc, self.spec.name, self.partition)

    def _refuse(self, req: ProduceRequest, exc: LiftlogError) -> None:
        self._metrics.produce_errors.labels(*self._labels, exc.code).inc()
        self._acks.error(req, exc)

    def _refuse_reply(self, reply: str | None, exc: LiftlogError) -> None:
        self._metrics.produce_errors.labels(*self._labels, exc.code).inc()
        if reply:
            self._queue_ack(reply, self._encode_error(exc))
            self._wakeup.set()

    def _queue_ack(self, subject: str, payload: bytes) -> None:
        self._outbox.append((subject, payload))

    async def send_acks(self) -> None:
        """Publish the acks queued so far (called wherever the HW may have moved)."""
        await self._send_acks()

    async def _send_acks(self) -> None:
        """Publish queued acks in order, from the writer task (no task per ack)."""
        while self._outbox:
            outbox, self._outbox = self._outbox, []
            for subject, payload in outbox:
                await self._publish(subject, payload)

    async def _run_writer(self) -> None:
        limits = self.config.ingest
        while not self._stopping:
            items = await next_cycle(
                self._queue,
                self._wakeup,
                IDLE_WAKEUP_S,
                limits.max_batch_records,
                limits.max_batch_bytes,
            )
            if len(self._queue) < self.config.ingest.pending_msgs_limit:
                self._space.set()
            if items:
                await self._write_cycle(items)
            await self._send_acks()
            await self._maintenance()

    async def _write_cycle(self, items: list[ProduceRequest]) -> None:
        """Sequence, encode and append one cycle; with fsync=always the flusher commits it."""
        refusal = self._write_refusal()
        if refusal is not None:
            for req in items:
                self._refuse(req, refusal)
            return
        async with self._write_lock:
            await self._write_cycle_locked(items)

    def _write_refusal(self) -> LiftlogError | None:
        if self.offline_reason is not None:
            return StorageError(self.offline_reason)
        if not self.is_leader:
            return NotLeaderError(
                self.fenced_reason
                or f"broker {self.config.broker_id} does not lead {self.spec.name}/{self.partition}"
            )
        return None

    async def _write_cycle_locked(self, items: list[ProduceRequest]) -> None:
        log_ = self.log
        start = log_.log_end_offset
        cycle = self._sequencer.sequence(items, start, self.leader_epoch, now_ms())
        sync = self.config.log.fsync == "always"
        # idle flusher (light load): append and fsync in one thread hop, for latency;
        # busy flusher (heavy load): append only and let the flusher's next fsync cover it
        inline_fsync = sync and not self._flushing and not self._flush_wanted.is_set()
        if cycle.batches:
            loop = asyncio.get_running_loop()
            try:
                await loop.run_in_executor(
                    None, self._append_cycle, loop, log_, cycle.batches, inline_fsync
                )
            except (OSError, LiftlogError) as exc:
                self._go_offline(f"log append failed: {exc}")
                for item in cycle.sequenced:
                    self._acks.error(item.request, StorageError(str(exc)))
                return
        if not sync or inline_fsync:
            self._advance_hw()  # durable per the policy already: commit before routing acks
        self._acks.after_append(
            cycle.sequenced, cycle.end_offset, log_.high_watermark, self._isr_ok()
        )
        if cycle.batches:
            size = self._count(cycle.batches, cycle.end_offset - start)
            if self._exporter is not None:
                self._exporter.appended(start, cycle.end_offset, size, now_ms())
            if sync and not inline_fsync:
                self._flush_wanted.set()
        duplicates = sum(1 for item in cycle.sequenced if item.duplicate)
        if duplicates:
            self._duplicates.inc(duplicates)

    async def _run_flusher(self) -> None:
        """Group commit, pipelined: fsync whatever the writer appended since the last fsync,
        then advance the HW and release acks=all, while the writer appends the next cycle."""
        loop = asyncio.get_running_loop()
        while not self._stopping:
            await self._flush_wanted.wait()
            self._flush_wanted.clear()
            if self._stopping:
                return  # close() flushes
            self._flushing = True
            try:
                await loop.run_in_executor(None, self.log.flush)
            except (OSError, LiftlogError) as exc:
                self._go_offline(f"log fsync failed: {exc}")
                await self._send_acks()
                return
            finally:
                self._flushing = False
            self._last_flush_ms = now_ms()
            self._advance_hw()
            await self._send_acks()

    def _append_cycle(
        self,
        loop: asyncio.AbstractEventLoop,
        log_: PartitionLog,
        batches: list[bytes],
        fsync: bool,
    ) -> None:
        """Worker thread: append batches this leader just encoded (its own CRCs, so not
        verified again), let waiting followers fetch them at once, then fsync if asked: the
        followers' round trip overlaps the leader's fsync, as in Kafka."""
        log_.append_many(batches, verify_crc=False)
        loop.call_soon_threadsafe(self._on_appended, batches)
        if fsync:
            log_.flush()

    def _on_appended(self, batches: list[bytes]) -> None:
        self.tail_cache.add(batches)
        self._signal_append()

    def _count(self, batches: list[bytes], records: int) -> int:
        """Count what was appended in the metrics; returns its size in bytes."""
        size = sum(len(b) for b in batches)
        if batches:
            self._records_in.inc(records)
            self._bytes_in.inc(size)
        return size

    def _isr_ok(self) -> bool:
        return len(self.isr) >= self.spec.effective_min_isr

    def _advance_hw(self) -> None:
        """Leader: HW = min LEO over the ISR (the leader's own LEO counted once durable).

        With |ISR| < min ISR the HW holds (KIP-966): nothing is committed on too few copies.
        """
        log_ = self._log
        if log_ is None or not self.is_leader or not self._isr_ok():
            return
        leader_leo = log_.log_end_offset
        if self.config.log.fsync == "always":
            leader_leo = min(leader_leo, log_.flushed_offset)
        target = self.followers.high_watermark(leader_leo, self.isr)
        if target > log_.high_watermark:
            log_.set_high_watermark(target)
            self._acks.purgatory.release(target)
            self._signal_hw()
            self._update_gauges()
            if self._exporter is not None:
                self._exporter.committed(target)

    def _signal_hw(self) -> None:
        self._hw_event.set()
        self._hw_event = asyncio.Event()

    async def _maintenance(self) -> None:
        """Idle-time work: interval fsync, HW checkpoint, retention, dedup expiry."""
        if self._log is None or self.offline_reason is not None:
            return
        now = now_ms()
        loop = asyncio.get_running_loop()
        cfg = self.config.log
        try:
            if cfg.fsync == "interval" and now - self._last_flush_ms >= cfg.fsync_interval_ms:
                await loop.run_in_executor(None, self.log.flush)
                self._last_flush_ms = now
            if now - self._last_hw_checkpoint_ms >= cfg.hw_checkpoint_interval_ms:
                await loop.run_in_executor(None, self.log.checkpoint_high_watermark)
                self._last_hw_checkpoint_ms = now
            await self._maintain_isr()
            if now - self._last_retention_ms >= cfg.retention_check_interval_ms:
                await self.apply_retention()
                self._last_retention_ms = now
        except (OSError, LiftlogError) as exc:
            self._go_offline(f"log maintenance failed: {exc}")
            return
        self._dedup.expire(now)

    async def apply_retention(self) -> int:
        """Delete old sealed segments per the stream's limits; with the lake enabled, only
        those wholly below the lake offset (the lake holds them, readers find them there)."""
        spec = self.spec
        if (
            spec.retention_ms is None
            and spec.retention_bytes is None
            and spec.retention_messages is None
        ):
            return 0
        lake_bound = await self._lake_retention_bound()
        if self.config.lake.enabled and lake_bound is None:
            return 0  # the lake cannot say what it holds right now: keep everything
        self._metrics.retention_checks.labels(*self._labels).inc()
        deleted = await asyncio.get_running_loop().run_in_executor(
            None,
            lambda: self.log.delete_old_segments(
                retention_ms=spec.retention_ms,
                retention_bytes=spec.retention_bytes,
                retention_messages=spec.retention_messages,
                max_deletable_offset=lake_bound,
            ),
        )
        if deleted:
            log.info(
                "%s/%d: retention deleted %d segment(s); log start offset now %d",
                spec.name,
                self.partition,
                deleted,
                self.log.log_start_offset,
            )
        return deleted

    def _limits_delete_something(self) -> bool:
        """Whether the stream's retention limits alone would delete a segment now (a cheap
        look at segment sizes and times, before a follower reads the lake for its bound)."""
        spec = self.spec
        limits = RetentionLimits(spec.retention_ms, spec.retention_bytes, spec.retention_messages)
        return self.log.deletable_segment_count(limits) > 0

    async def _lake_is_the_clusters(self) -> bool:
        """A follower trusts its lake's table for retention only if the lake is the cluster's:
        a stray lake's table could claim offsets the real lake never received."""
        if self._lake_identity is None:
            return True
        try:
            await in_lake_thread(self._lake_identity.verify)
        except LiftlogError as exc:
            log.warning(
                "%s/%d: retention skipped, the lake is not verified: %s",
                self.spec.name,
                self.partition,
                exc,
            )
            return False
        return True

    async def _lake_retention_bound(self) -> int | None:
        """The lake offset retention must stay below: the exporter's on a leader, the
        table's own on a follower (None with the lake disabled, or if the table is
        unreachable; a never-exported partition holds nothing: its log start)."""
        uri = self.lake_table_uri
        if uri is None:
            return None
        if self.lake_offset is not None:
            return self.lake_offset
        if not self._limits_delete_something():
            return self.log.log_start_offset  # nothing to delete: the lake need not be read
        if not await self._lake_is_the_clusters():
            return None
        table = LakeTable(uri, self.spec.name)
        try:
            offsets = await in_lake_thread(table.exported_offsets, self.partition + 1)
        except LiftlogError as exc:
            log.warning(
                "%s/%d: retention skipped, the lake is unreadable: %s",
                self.spec.name,
                self.partition,
                exc.message,
            )
            return None
        exported = offsets[self.partition]
        return exported if exported is not None else self.log.log_start_offset

    async def seal_and_export(self) -> dict[str, Any]:
        """``liftlog stream flush`` on the leader: roll the active segment, fsync, checkpoint
        the HW, then export everything committed now and return once the lake holds it."""
        if not self.is_leader:
            raise self._not_leader_error()
        self._raise_if_offline()
        loop = asyncio.get_running_loop()
        async with self._write_lock:
            await loop.run_in_executor(None, self._seal)
        self._advance_hw()
        log_ = self.log
        target = log_.high_watermark
        lake_offset = None
        if self._exporter is not None:
            lake_offset = await self._exporter.export_through(
                target, self.config.lake.flush_timeout_s
            )
        return {
            "partition": self.partition,
            "high_watermark": target,
            "log_start_offset": log_.log_start_offset,
            "lake_offset": lake_offset,
        }

    def _seal(self) -> None:
        log_ = self.log
        log_.roll()
        log_.flush()
        log_.checkpoint_high_watermark()

    def _go_offline(self, reason: str) -> None:
        log.error("%s/%d is offline: %s", self.spec.name, self.partition, reason)
        self.offline_reason = reason
        self._metrics.offline_partitions.inc()
        self._fail_waiting(StorageError(reason))

    def _raise_if_offline(self) -> None:
        if self.offline_reason is not None:
            raise StorageError(
                f"{self.spec.name}/{self.partition} is offline: {self.offline_reason}"
            )

    def _fail_waiting(self, exc: LiftlogError) -> None:
        self._acks.purgatory.fail_all(exc)
        queued, self._queue = self._queue, []
        for req in queued:
            self._acks.error(req, exc)

    def _update_gauges(self) -> None:
        if self._log is None:
            return
        self._metrics.high_watermark.labels(*self._labels).set(self._log.high_watermark)
        self._metrics.log_end_offset.labels(*self._labels).set(self._log.log_end_offset)

    # ----------------------------------------------------------------- dedup rebuild

    def _rebuild_dedup(self) -> None:
        """Re-learn ``Nats-Msg-Id``s of the last window from the log's own records."""
        log_ = self.log
        horizon = now_ms() - int(self.config.ingest.dedup_window_s * 1000)
        start = log_.offset_for_timestamp(horizon)
        if start is None:
            return
        start = max(start, log_.log_start_offset)
        while start < log_.log_end_offset:
            data = log_.read(start, self.config.ingest.max_fetch_bytes)
            if not data:
                return
            for header, view in iter_batches(data, verify=False):
                self._learn_ids(decode_records(view), header.base_offset)
                start = header.next_offset

    def _learn_ids(self, batch: pa.RecordBatch, base_offset: int) -> None:
        headers = batch.column("headers")
        if headers.null_count == len(headers):
            return
        lengths = pc.fill_null(pc.list_value_length(headers), 0).to_numpy(zero_copy_only=False)
        flat = pc.list_flatten(headers)
        keys = flat.field("key").to_pylist()
        values = flat.field("value").to_pylist()
        timestamps = batch.column("timestamp").to_pylist()
        pos = 0
        for row, length in enumerate(lengths):
            pairs = dict(zip(keys[pos : pos + length], values[pos : pos + length], strict=True))
            pos += int(length)
            msg_id = pairs.get(HEADER_MSG_ID)
            if msg_id is not None:
                count = int(pairs.get(HEADER_BATCH_COUNT, b"1"))
                self._dedup.add(msg_id.decode(), base_offset + row, count, timestamps[row])

    # ----------------------------------------------------------------- fetch

    async def fetch(
        self, offset: int, max_records: int, max_bytes: int, wait_ms: int, *, arrow: bool = False
    ) -> FetchResult:
        """Committed records from ``offset``; long-polls up to ``wait_ms`` when none exist yet.

        ``arrow`` builds ``table`` straight from the stored Arrow batches (no Record objects)."""
        log_ = self.log
        if offset < log_.log_start_offset or offset > log_.log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {offset} is outside [{log_.log_start_offset}, {log_.log_end_offset}] "
                f"of {self.spec.name}/{self.partition}"
            )
        if offset >= log_.high_watermark and wait_ms > 0:
            await self._wait_for_hw(wait_ms)
        log_ = self.log
        hw = log_.high_watermark
        if offset >= hw:
            return FetchResult([], hw, log_.log_start_offset)
        loop = asyncio.get_running_loop()
        if arrow:
            table = await loop.run_in_executor(
                None, self._read_table, log_, offset, max_records, max_bytes, hw
            )
            return FetchResult([], hw, log_.log_start_offset, table)
        records = await loop.run_in_executor(
            None, self._read_records, log_, offset, max_records, max_bytes, hw
        )
        return FetchResult(records, hw, log_.log_start_offset)

    async def _wait_for_hw(self, wait_ms: int) -> None:
        self._metrics.fetch_waiters.inc()
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._hw_event.wait(), wait_ms / 1000)
        finally:
            self._metrics.fetch_waiters.dec()

    @staticmethod
    def _read_records(
        log_: PartitionLog, offset: int, max_records: int, max_bytes: int, hw: int
    ) -> list[Record]:
        data = log_.read(offset, max_bytes, hw)
        return records_from_batches(data, offset, hw, max_records)

    @staticmethod
    def _read_table(
        log_: PartitionLog, offset: int, max_records: int, max_bytes: int, hw: int
    ) -> pa.Table:
        data = log_.read(offset, max_bytes, hw)
        return table_from_batches(data, offset, hw, max_records)

    async def offset_for_timestamp(self, timestamp_ms: int) -> int:
        log_ = self.log
        found = await asyncio.get_running_loop().run_in_executor(
            None, log_.offset_for_timestamp, timestamp_ms
        )
        return log_.high_watermark if found is None else min(found, log_.high_watermark)
