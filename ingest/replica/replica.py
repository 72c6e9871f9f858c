"""A partition replica on this node: the composition root of its parts (Kafka's ``Partition``).

It opens the log, assembles the parts that work on it and hands them out, so a caller asks the
part that owns a fact (``replica.state.leader_epoch``); its own methods are those that compose
several parts. One task at a time mutates the log, under the write lock: the leader's writer,
the follower's fetcher or the storage-stall retry.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Final

from nats.aio.client import Client as NatsClient

from coordinator.errors import ZkNotSentError, ZkUnavailableError
from coordinator.znodes import PartitionState
from ingest.clock import SYSTEM_CLOCK, Clock
from ingest.errors import ReplicaStoppedError
from ingest.lake.exporter import ExportTarget, PartitionExporter
from ingest.lake.identity import LakeIdentity
from ingest.metrics import NodeMetrics
from ingest.produce.dedup_rebuild import rebuild_dedup_window
from ingest.produce.intake import Intake
from ingest.produce.request import ProduceAck, ProduceRequest
from ingest.produce.subscription import PartitionSubscription
from ingest.produce.write_path import LeaderWritePath
from ingest.replica.idle_pause import IdlePause
from ingest.replica.maintenance import MaintenanceRunner
from ingest.replica.read_path import FetchResult, ReadPath
from ingest.replica.retention import RetentionRunner
from ingest.replication.fetch_server import FetchServer
from ingest.replication.fetcher import ReplicaFetcher
from ingest.replication.follower_path import FollowerPath
from ingest.replication.partition_state import ROLE_FOLLOWER, ROLE_LEADER, Partition
from ingest.replication.storage_stall_retry import StorageStallRetry
from ingest.replication.tail_cache import TailCache
from spark_log.api_models import PartitionFlush
from spark_log.config import LakeConfig, NodeConfig
from spark_log.crypto import ValueCipher
from spark_log.errors import LiftlogError, NotLeaderError, StorageError, StreamPausedError
from spark_log.lake import configured_table_uri
from spark_log.lake.storage import lake_storage
from spark_log.lake.typed_values import SchemaLookup
from spark_log.log import PartitionLog
from spark_log.stream_spec import StreamSpec

__all__ = ["FetchResult", "IsrWriter", "PartitionReplica"]

log = logging.getLogger("liftlog.partition")

# an ISR change refused because ZooKeeper is unavailable is tried again this much later
ISR_RETRY_MS = 1000

IsrWriter = Callable[[PartitionState, int, list[int]], Awaitable[tuple[PartitionState, int]]]


class PartitionReplica:
    """One stream partition's replica on this broker: leader, follower or offline.

    Its parts are read-only attributes: ``state`` (role, epochs, ISR), ``writes``, ``reads``,
    ``subscription``, ``idle``, ``follower_path``, ``maintenance``, ``retention``,
    ``storage_retry``, ``tail_cache``, and ``exporter`` while it leads with a lake.
    """

    def __init__(
        self,
        *,
        spec: StreamSpec,
        partition: int,
        directory: Path,
        config: NodeConfig,
        metrics: NodeMetrics,
        intake: Intake,
        leader_epoch: int,
        isr: list[int],
        replicas: tuple[int, ...] = (),
        leader_id: int | None = None,
        created_at_ms: int,
        lake_identity: LakeIdentity | None = None,
        clock: Clock = SYSTEM_CLOCK,
        cipher: ValueCipher | None = None,
    ) -> None:
        self.spec = spec
        self.partition = partition
        self.directory = directory
        self.created_at_ms = created_at_ms
        self.config = config
        self.lake_table_uri: Final = _lake_table_uri(config.lake, spec, created_at_ms)
        self.isr_writer: IsrWriter | None = None
        self._clock = clock
        self._metrics = metrics
        self._lake_identity = lake_identity
        self._cipher = cipher
        self._intake = intake
        self._log: PartitionLog | None = None
        self._isr_retry_at_ms = 0  # an ISR change postponed (ZooKeeper unavailable) until then
        self._write_lock = asyncio.Lock()  # one log writer: writer, fetcher or storage retry
        self._leo_event = asyncio.Event()
        self._tasks: set[asyncio.Task[object]] = set()
        self._fetcher: ReplicaFetcher | None = None
        self._fetch_server: FetchServer | None = None
        self._exporter: PartitionExporter | None = None
        self.schemas: SchemaLookup | None = None
        """The schema registry a typed stream's lake export decodes with (set by the
        manager)."""
        fsync_always = config.log.fsync == "always"
        self.state: Final = Partition(
            broker_id=config.broker_id,
            stream=spec.name,
            partition=partition,
            min_isr=spec.effective_min_isr,
            leader_epoch=leader_epoch,
            isr=isr,
            replicas=replicas,
            leader_id=leader_id,
        )
        self.tail_cache: Final = TailCache()
        # auto-pause (``auto_pause_ms``): the replica manager sets its ZooKeeper marker
        self.idle: Final = IdlePause(self.state, clock)
        self.reads: Final = ReadPath(
            self.state.name, lambda: self.log, metrics, lambda: self._cipher
        )
        self.writes: Final = LeaderWritePath(
            spec=spec,
            partition=self.state,
            ingest=config.ingest,
            fsync_always=fsync_always,
            metrics=metrics,
            publish=intake.publish,
            clock=clock,
            hooks=self,
            write_lock=self._write_lock,
            resume_idle=self.idle.resume,
        )
        self.writes.cipher = cipher
        self.subscription: Final = PartitionSubscription(
            spec, partition, config.ingest, metrics, clock, self.writes.on_messages
        )
        self.retention: Final = RetentionRunner(
            spec=spec,
            partition=partition,
            log_=lambda: self.log,
            lake_enabled=config.lake.enabled,
            table_uri=self.lake_table_uri,
            lake_offset=lambda: self._exporter.lake_offset if self._exporter else None,
            lake_identity=lake_identity,
            metrics=metrics,
            storage=lake_storage(config.lake),
        )
        self.maintenance: Final = MaintenanceRunner(
            self, self.state, config.log, self.retention, clock, dedup=lambda: self.writes.dedup
        )
        self.follower_path: Final = FollowerPath(
            self.state,
            lambda: self.log,
            self._write_lock,
            fsync_always,
            self,
            self.reads.signal_high_watermark,
        )
        self.storage_retry: Final = StorageStallRetry(
            self, self.state, self._write_lock, metrics, clock
        )

    @property
    def cipher(self) -> ValueCipher | None:
        """The value cipher of an encrypted stream's partition (None: clear, or no key yet)."""
        return self._cipher

    @cipher.setter
    def cipher(self, cipher: ValueCipher | None) -> None:
        self._cipher = cipher
        self.writes.cipher = cipher

    @property
    def exporter(self) -> PartitionExporter | None:
        """The lake exporter of this leadership (None on a follower, or with no lake); it
        knows the lake offsets (``lake_offset``, ``lake_start_offset``)."""
        return self._exporter

    # ----------------------------------------------------------------- lifecycle

    @property
    def log(self) -> PartitionLog:
        if self._log is None:
            raise ReplicaStoppedError(f"{self.state.name} is not open")
        return self._log

    @property
    def open_log(self) -> PartitionLog | None:
        """The log, or None once the replica is closed (describe must not raise then)."""
        return self._log

    async def open(self) -> None:
        """Open (and recover) the log, then start the writer and the flusher."""
        self._log = await asyncio.get_running_loop().run_in_executor(
            None,
            lambda: PartitionLog.open(self.directory, self.config.log, now_ms=self._clock.now_ms),
        )
        self.on_log_changed()
        self.writes.start(f"{self.spec.name}-{self.partition}")

    async def close(self, *, deleting: bool = False) -> None:
        """Stop ingest, fail waiting requests, flush and close the log (``deleting``: only
        close it; its checkpoints would be deleted with it, and writing them fails on a full
        disk)."""
        await self.storage_retry.close()
        await self._leave_role()
        self.subscription.unsubscribe()
        await self.writes.stop()
        for task in list(self._tasks):
            task.cancel()
        self.writes.fail_waiting(ReplicaStoppedError(f"{self.state.name} is closing"))
        self.writes.send_acks()
        if self._log is not None:
            log_, self._log = self._log, None
            await asyncio.get_running_loop().run_in_executor(
                None, lambda: log_.close(clean=not deleting)
            )
        self.reads.signal_high_watermark()

    async def delete(self) -> None:
        await self.close(deleting=True)
        await asyncio.get_running_loop().run_in_executor(
            None, lambda: shutil.rmtree(self.directory, ignore_errors=True)
        )

    def track_task(self, task: asyncio.Task[object]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ----------------------------------------------------------------- the stream's spec

    def adopt_stream(self, spec: StreamSpec, read_only: bool) -> None:
        """Take the stream's spec and read-only flag as ZooKeeper holds them now (every
        reconcile): an alter or a read-only switch applies on every node without a restart.
        Only alterable fields can differ (``stream_spec.altered_spec``), so the subject and
        the log's identity never change under a running replica."""
        if read_only != self.state.read_only:
            log.info("%s: %s", self.state.name, "read-only" if read_only else "read-write")
        self.state.read_only = read_only
        if spec == self.spec:
            return
        log.info("%s: stream spec altered", self.state.name)
        self.spec = spec
        self.state.min_isr = spec.effective_min_isr
        self.writes.adopt_spec(spec)
        self.retention.adopt_spec(spec)

    def _sync_subscription(self, paused: bool) -> None:
        """A leader always listens; paused, it answers ``stream_paused`` and stores nothing."""
        if paused != self.state.paused:
            log.info("%s: %s", self.state.name, "paused" if paused else "resumed")
        self.state.paused = paused
        if not self.spec.internal:  # written by the nodes alone, never from NATS
            self.subscription.subscribe(self._intake)

    # ----------------------------------------------------------------- roles

    async def apply_state(
        self, state: PartitionState, version: int, nc: NatsClient, paused: bool, cluster: str
    ) -> None:
        """Take the role ZooKeeper gives this broker; a new leader epoch always re-enters it."""
        if self.state.observe(state, version):
            if self.state.role == ROLE_LEADER:
                if self.state.lift_isr_fence():
                    log.info(
                        "%s: state re-read (ISR %s, version %d): acknowledging again",
                        self.state.name,
                        list(state.isr),
                        version,
                    )
                self._sync_subscription(paused)
                self.advance_high_watermark()
            return
        await self._leave_role()
        role = self.state.enter(state)
        if role == ROLE_LEADER:
            self.state.lift_isr_fence()  # a newer state (a new epoch) is the re-read it awaited
            await self._become_leader(nc, paused, cluster)
        elif role == ROLE_FOLLOWER:
            self._fetcher = ReplicaFetcher(
                self.follower_path,
                nc,
                cluster,
                on_fetched=self._metrics.replica_fetch.labels(self.spec.name).observe,
            )
            self._fetcher.start()
        log.info(
            "%s: %s at leader epoch %d (leader %d, ISR %s)",
            self.state.name,
            role,
            state.leader_epoch,
            state.leader,
            list(state.isr),
        )

    async def _become_leader(self, nc: NatsClient, paused: bool, cluster: str) -> None:
        log_ = self.log
        self.tail_cache.clear()
        self.state.start_leadership(self._clock.now_ms())
        self.idle.restart()
        await self._record_leader_epoch(log_)
        if self.state.isr == [self.config.broker_id]:
            log_.set_high_watermark(log_.log_end_offset)
        ingest = self.config.ingest
        window = await asyncio.get_running_loop().run_in_executor(
            None,
            rebuild_dedup_window,
            log_,
            int(ingest.dedup_window_s * 1000),
            ingest.dedup_max_ids,
            self._clock.now_ms(),
            ingest.max_fetch_bytes,
        )
        self.writes.replace_dedup(window)
        self._fetch_server = FetchServer(
            self, nc, cluster, send_acks=self.writes.send_acks, metrics=self._metrics
        )
        await self._fetch_server.start()
        self._sync_subscription(paused)
        self._start_exporter()
        self.on_log_changed()

    async def _record_leader_epoch(self, log_: PartitionLog) -> None:
        """Put this leadership's epoch in the epoch cache at the LEO before a follower can ask
        about it (Kafka's makeLeader, KIP-279): a follower holding records of an epoch this
        log never saw learns at once where this log's own epochs end. A full disk stalls the
        replica (``resume_writes`` records the epoch then); any other failure (a log already
        holding a later epoch) takes it offline."""
        try:
            async with self._write_lock:
                await asyncio.get_running_loop().run_in_executor(
                    None, log_.assign_leader_epoch, self.state.leader_epoch
                )
        except LiftlogError as exc:
            self.go_offline(
                f"cannot record leader epoch {self.state.leader_epoch}: {exc.message}", exc
            )

    def _start_exporter(self) -> None:
        """Export this leadership's committed records to the lake; everything already in the
        log counts as overdue (its size and age were not tracked here)."""
        uri = self.lake_table_uri
        if uri is None:
            return
        target = ExportTarget(
            self.spec.name,
            self.partition,
            uri,
            self.config.broker_id,
            self.state.leader_epoch,
            encrypted=self.spec.encryption,
        )
        self._exporter = PartitionExporter(
            self,
            target,
            self.config.lake,
            self._metrics,
            self.log.log_end_offset,
            self._lake_identity,
            clock=self._clock,
            cipher=lambda: self._cipher,
            binding=lambda: self.spec.value_schema,
            registry=self.schemas,
        )
        self._exporter.start()

    async def _leave_role(self) -> None:
        """Stop what the old role did; a deposed leader fails everything it had not acked."""
        if self.state.role == ROLE_LEADER:
            self.subscription.unsubscribe()
            if self._exporter is not None:
                exporter, self._exporter = self._exporter, None
                await exporter.stop(self.state.not_leader_error())
            if self._fetch_server is not None:
                await self._fetch_server.stop()
                self._fetch_server = None
            async with self._write_lock:  # the writer's cycle in progress completes first
                self.writes.fail_waiting(self.state.not_leader_error())
            self.writes.send_acks()
        if self._fetcher is not None:
            await self._fetcher.stop()
            self._fetcher = None
        self.state.leave()
        # reads long-polling here learn at once that the role changed (a subscription
        # served by the leader ends then, rather than after its wait)
        self.reads.signal_high_watermark()

    def fence(self, reason: str | None) -> None:
        """Stop (reason) or resume (None) acknowledging: the ZooKeeper session is in doubt."""
        if self.state.fence(reason) and reason is not None:
            log.warning("%s: fenced, no more acks: %s", self.state.name, reason)
            self.writes.fail_parked(NotLeaderError(reason))

    # ----------------------------------------------------------------- leader: HW and ISR

    def advance_high_watermark(self) -> None:
        """Leader: HW = min LEO over the ISR (the leader's own LEO counted once durable).

        With |ISR| < min ISR the HW holds (KIP-966): nothing is committed on too few copies.
        """
        log_ = self._log
        if log_ is None:
            return
        leader_leo = log_.log_end_offset
        if self.config.log.fsync == "always":
            leader_leo = min(leader_leo, log_.flushed_offset)
        target = self.state.high_watermark_target(leader_leo, log_.high_watermark)
        if target is None:
            return
        log_.set_high_watermark(target)
        # every ISR member has what lies below the HW, and only a follower outside the ISR
        # fetches there (from the log): the cache keeps in-flight bytes only, and nothing
        # at all without followers (a partition with RF 1 held 8 MiB for ever)
        self.tail_cache.trim_below(target)
        self.writes.release(target)
        self.reads.signal_high_watermark()
        self.on_log_changed()
        if self._exporter is not None:
            self._exporter.committed(target)

    def record_follower_fetch(self, replica_id: int, fetch_offset: int) -> None:
        self.state.record_follower_fetch(
            replica_id, fetch_offset, self.log.log_end_offset, self._clock.now_ms()
        )
        self.advance_high_watermark()

    async def maintain_isr(self) -> None:
        """Leader: shrink lagging followers out, expand caught-up ones in (ZooKeeper first)."""
        if self.isr_writer is None:
            return
        max_lag_ms = int(self.config.replica_lag_time_max_s * 1000)
        now_ms = self._clock.now_ms()
        if now_ms < self._isr_retry_at_ms:
            return
        change = self.state.isr_change(self.log.high_watermark, now_ms, max_lag_ms)
        if change is None:
            return
        sent_version = self.state.state_version
        try:
            state, version = await self.isr_writer(change.expected, sent_version, change.new_isr)
        except LiftlogError as exc:
            if _may_postpone(exc, self.state.isr, change.new_isr):
                # Kafka's rule without ZooKeeper: keep the ISR and try again later. A lagging
                # follower kept in the ISR holds the HW, so acks=all waits (or times out)
                # instead of being acknowledged on fewer replicas.
                log.warning(
                    "%s: ISR change to %s postponed, ZooKeeper unavailable (%s)",
                    self.state.name,
                    change.new_isr,
                    exc.message,
                )
                self._isr_retry_at_ms = now_ms + ISR_RETRY_MS
                return
            log.warning(
                "%s: ISR change to %s refused (%s): fencing until re-read",
                self.state.name,
                change.new_isr,
                exc.message,
            )
            if self.state.fence_for_isr(f"ISR write failed: {exc.message}", sent_version):
                log.warning("%s: fenced, no more acks until re-read", self.state.name)
                self.writes.fail_parked(NotLeaderError(exc.message))
            return
        log.info("%s: ISR %s -> %s", self.state.name, self.state.isr, list(state.isr))
        self._count_isr_change(self.state.isr, state.isr)
        self.state.apply_isr(state.isr, version)
        self.advance_high_watermark()

    def _count_isr_change(self, old: Iterable[int], new: Iterable[int]) -> None:
        """Kafka's IsrShrinksPerSec and IsrExpandsPerSec: a healthy cluster shows neither."""
        before, after = set(old), set(new)
        labels = (self.spec.name, str(self.partition))
        if before - after:
            self._metrics.isr_shrinks.labels(*labels).inc(len(before - after))
        if after - before:
            self._metrics.isr_expands.labels(*labels).inc(len(after - before))

    async def wait_for_append(self, wait_ms: int) -> None:
        """Wait until the leader appends (or ``wait_ms``): a follower's long poll at the LEO."""
        try:
            await asyncio.wait_for(self._leo_event.wait(), wait_ms / 1000)
        except TimeoutError:
            return

    # ----------------------------------------------------------------- write-path hooks

    def on_appended(self, batches: list[bytes]) -> None:
        self.idle.clock.appended(self._clock.now_ms())
        self.tail_cache.add(batches)
        self._leo_event.set()
        self._leo_event = asyncio.Event()

    def on_cycle_written(self, start: int, end: int, size_bytes: int) -> None:
        if self._exporter is not None:
            self._exporter.appended(start, end, size_bytes, self._clock.now_ms())

    def on_flushed(self, now_ms: int) -> None:
        """The flusher's fsync: no interval fsync is due for a while, and the HW may move."""
        self.maintenance.flushed(now_ms)
        self.advance_high_watermark()

    async def run_maintenance(self) -> None:
        """Idle-time upkeep, then the auto-pause check; none while paused for idleness
        (nothing is appended then: fsync, checkpoint and retention wait for the resume)."""
        if self.state.idle_paused:
            return
        await self.maintenance.run_once()
        await self.idle.pause_if_idle(self.spec)

    def go_offline(self, reason: str, cause: BaseException | None = None) -> None:
        """Refuse writes: for good, or, when ``cause`` is a full disk, until the storage retry
        finds space again (a replica already offline for good stays so).

        A stall forgets the message ids of records at or past the LEO (a retried publish must
        be stored, not answered as a duplicate of a record that is not in the log; the write
        path forgets those of a failed cycle's unstored requests itself), and the tail cache
        (part of a failed cycle may be in the log without being cached)."""
        if cause is not None and self.storage_retry.may_stall(cause):
            self.on_truncated(self.log.log_end_offset)
            self.writes.fail_waiting(StorageError(reason))
            self.storage_retry.stall(reason)
            return
        log.error("%s is offline: %s", self.state.name, reason)
        self.storage_retry.go_offline(reason)
        self.writes.fail_waiting(StorageError(reason))

    # ----------------------------------------------------------------- follower-path hooks

    def on_truncated(self, offset: int) -> None:
        self.tail_cache.clear()
        self.writes.dedup.forget_from(offset)

    def on_log_changed(self) -> None:
        """The log's HW or LEO may have moved: their gauges follow."""
        if self._log is None:
            return
        labels = (self.spec.name, str(self.partition))
        self._metrics.high_watermark.labels(*labels).set(self._log.high_watermark)
        self._metrics.log_end_offset.labels(*labels).set(self._log.log_end_offset)

    # ----------------------------------------------------------------- produce, flush, read

    async def produce(self, requests: list[ProduceRequest]) -> list[ProduceAck]:
        """Append requests that did not come from NATS (REST publishes); wait for their acks."""
        if not self.state.is_leader:
            raise NotLeaderError(
                f"broker {self.config.broker_id} does not lead {self.state.name}"
                f" (leader: {self.state.leader_id})"
            )
        if self.state.paused:
            raise StreamPausedError(f"stream {self.spec.name} is paused")
        if self.state.read_only:
            raise self.state.read_only_error()
        if (offline := self.state.offline_error()) is not None:
            raise offline
        return await self.writes.produce(requests)

    async def roll_segment(self) -> None:
        """Seal the active segment now (a ``__cursors`` snapshot starts a fresh one, so that
        everything before it is whole segments its deletion can drop)."""
        async with self._write_lock:
            await asyncio.get_running_loop().run_in_executor(None, self.log.roll)

    async def seal_and_export(self) -> PartitionFlush:
        """``liftlog stream flush`` on the leader: roll the active segment, fsync, checkpoint
        the HW, then export everything committed now and return once the lake holds it."""
        if not self.state.is_leader:
            raise self.state.not_leader_error()
        if (offline := self.state.offline_error()) is not None:
            raise offline
        async with self._write_lock:
            await asyncio.get_running_loop().run_in_executor(None, _seal, self.log)
        self.advance_high_watermark()
        log_ = self.log
        target = log_.high_watermark
        lake_offset = None
        if self._exporter is not None:
            lake_offset = await self._exporter.export_through(
                target, self.config.lake.flush_timeout_s
            )
        return PartitionFlush(self.partition, target, log_.log_start_offset, lake_offset)

    async def fetch(
        self, offset: int, max_records: int, max_bytes: int, wait_ms: int, *, arrow: bool = False
    ) -> FetchResult:
        """Committed records from ``offset`` (see ``ReadPath.fetch``). A consumer's fetch
        resumes a partition paused for idleness, and is activity for
        ``auto_pause_disable_if_subscribers``."""
        self.idle.resume_soon()
        self.idle.clock.fetch_started(self._clock.now_ms())
        try:
            return await self.reads.fetch(offset, max_records, max_bytes, wait_ms, arrow=arrow)
        finally:
            self.idle.clock.fetch_ended(self._clock.now_ms())


def _lake_table_uri(lake: LakeConfig, spec: StreamSpec, created_at_ms: int) -> str | None:
    """The stream's Delta table, or None when the lake is disabled (and for internal
    streams, whose records matter to the nodes only)."""
    if spec.internal:
        return None
    return configured_table_uri(lake, spec.name, created_at_ms)


def _seal(log_: PartitionLog) -> None:
    """Roll the active segment, fsync and checkpoint the HW (worker thread)."""
    log_.roll()
    log_.flush()
    log_.checkpoint_high_watermark()


def _may_postpone(exc: LiftlogError, isr: list[int], new_isr: list[int]) -> bool:
    """Whether a failed ISR write may be retried later while this leader keeps leading.

    A write never sent changed nothing. A shrink whose outcome is unknown is safe to keep
    leading through too: if ZooKeeper did apply it, the leader still counts the larger ISR for
    its HW (stricter than needed), and its next write meets a version conflict and fences. An
    expansion whose outcome is unknown is not: ZooKeeper may already name the new member, which
    could be elected while this leader's HW ignored it, so that case fences (Kafka's
    "maximal ISR" problem).
    """
    if isinstance(exc, ZkNotSentError):
        return True
    return isinstance(exc, ZkUnavailableError) and set(new_isr) <= set(isr)
