"""Makes the replicas this node hosts match what ZooKeeper says (Kafka's ReplicaManager).

ZooKeeper watches only *trigger* a reconcile; the reconcile re-reads the whole state, so a
missed or coalesced watch event can never leave a replica in the wrong role.

A replica whose log lost durable data at recovery (``PartitionLog.recovery_loss``) takes itself
out of the ISR before it takes any role: it no longer holds every committed record, so it must
not be elected until it has caught up from a leader, which the leader shows by expanding it
back into the ISR. Its log keeps the loss until then, across restarts.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nats.aio.client import Client as NatsClient

from coordinator import reassignment_store
from coordinator.errors import VersionConflictError, ZkNotSentError
from coordinator.isr import bump_epoch_after_restart, leave_isr_for_data_loss, update_isr
from coordinator.partition_keys import load_cipher
from coordinator.schemas.registry import SchemaRegistry
from coordinator.streams import StreamStore
from coordinator.zk import ZkSession
from coordinator.znodes import PartitionState, StreamRecord
from ingest.clock import SYSTEM_CLOCK, Clock
from ingest.lake.commit_safety import LakeSafety
from ingest.lake.identity import LakeIdentity
from ingest.metrics import NodeMetrics
from ingest.produce.intake import Intake
from ingest.produce.value_check import ValueChecker
from ingest.produce.write_path import DeadLetterSink
from ingest.replica.idle_pause import IdleMarker
from ingest.replica.replica import IsrWriter, PartitionReplica
from ingest.replication.throttle import ReplicationThrottle
from spark_log.config import NodeConfig
from spark_log.crypto import ValueCipher, master_key_provider
from spark_log.errors import (
    LiftlogError,
    NotLeaderError,
    PartitionNotFoundError,
    StreamNotFoundError,
    UnavailableError,
)
from spark_log.fetch_wire import cluster_token
from spark_log.lake.storage import lake_storage
from spark_log.log import RecoveryLoss
from spark_log.stream_spec import StreamSpec
from spark_log.subjects import subject_matches

log = logging.getLogger("liftlog.replicas")

STREAMS_DIR = "streams"


@dataclass(frozen=True)
class StreamView:
    """A stream as last read from ZooKeeper, with its partition states."""

    record: StreamRecord
    states: dict[int, PartitionState]
    versions: dict[int, int]


def partition_dir(data_dir: Path, record: StreamRecord, partition: int) -> Path:
    """``streams/<name>@<created_at_ms>/<p>``: a re-created stream never sees old data."""
    return data_dir / STREAMS_DIR / f"{record.spec.name}@{record.created_at_ms}" / str(partition)


class ReplicaManager:
    def __init__(
        self,
        config: NodeConfig,
        store: StreamStore,
        metrics: NodeMetrics,
        intake: Intake,
        nats: Callable[[], NatsClient],
        session: ZkSession,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.config = config
        self._clock = clock
        self._store = store
        self._session = session
        self._metrics = metrics
        self._intake = intake
        self._nats = nats
        self._data_dir = Path(config.data_dir)
        self.replicas: dict[tuple[str, int], PartitionReplica] = {}
        self.streams: dict[str, StreamView] = {}
        self.publish_check: Callable[[str, str], LiftlogError | None] | None = None
        """(stream, principal) -> why that principal may not publish there, or None: the
        node's second line behind NATS's own permissions (set by the node when NATS logins
        are Liftlog tokens)."""
        self.value_checker: ValueChecker | None = None
        """Checks typed streams' values against the schema registry (set by the node)."""
        self.dead_letters: DeadLetterSink | None = None
        """Stores typed streams' invalid records in their dead letter streams (set by the
        node)."""
        self.schemas: SchemaRegistry | None = None
        """The schema registry, which typed streams' lake exports decode with (set by the
        node)."""
        self._lock = asyncio.Lock()
        self.cluster = cluster_token(config.zk_root)
        # read and checked at start: a bad master key fails the node, not its first write
        self.key_provider = master_key_provider(config.encryption)
        if self.key_provider is not None:
            log.info("encryption at rest: master keys %s", ", ".join(self.key_provider.key_ids))
        storage = lake_storage(config.lake)
        self.lake_safety = LakeSafety(storage, metrics) if config.lake.enabled else None
        self._lake_identity = (
            LakeIdentity(session, storage, config.broker_id, clock, safety=self.lake_safety)
            if config.lake.enabled
            else None
        )
        # Replicas with a recovery loss that this incarnation took out of the ISR: back in
        # the ISR from then on means the leader saw them catch up.
        self._left_isr: set[tuple[str, int]] = set()
        # replicas an earlier incarnation held, until their leadership has been checked
        self._restart_pending: set[tuple[str, int]] = set()
        rate = config.reassignment_throttle_bytes_per_s
        self._throttle = ReplicationThrottle(rate) if rate > 0 else None
        self._adding: set[tuple[str, int]] = set()
        metrics.under_replicated.set_function(self.under_replicated_count)
        metrics.under_min_isr.set_function(self.under_min_isr_count)

    # ----------------------------------------------------------------- lookups

    def under_replicated_count(self) -> int:
        """Partitions this node leads whose ISR lacks one of their replicas (Kafka's
        UnderReplicatedPartitions: counted by the leader, so each partition counts once)."""
        return sum(
            1
            for r in self.replicas.values()
            if r.state.is_leader and len(r.state.isr) < len(r.state.replicas)
        )

    def under_min_isr_count(self) -> int:
        """Partitions this node leads that refuse acks=all: |ISR| < min ISR."""
        return sum(1 for r in self.replicas.values() if r.state.is_leader and not r.state.isr_ok)

    def replica(self, stream: str, partition: int) -> PartitionReplica:
        view = self.streams.get(stream)
        if view is None:
            raise StreamNotFoundError(f"stream {stream!r} does not exist")
        if not 0 <= partition < view.record.spec.partitions:
            raise PartitionNotFoundError(
                f"stream {stream!r} has no partition {partition} "
                f"(partitions: {view.record.spec.partitions})"
            )
        replica = self.replicas.get((stream, partition))
        if replica is None:
            state = view.states.get(partition)
            leader = state.leader if state else None
            raise NotLeaderError(
                f"broker {self.config.broker_id} has no replica of "
                f"{stream}/{partition}; the leader is broker {leader}"
            )
        return replica

    # ----------------------------------------------------------------- reconcile

    async def recover(self) -> None:
        """Open (recover) every replica this broker hosts before it registers, and take the
        ones whose recovery lost durable data out of their ISRs; no roles yet."""
        async with self._lock:
            views = await asyncio.to_thread(self._read_state)
            for key, (view, state) in self._desired(views).items():
                replica = await self._open_replica(key, view, state)
                await self._guard_lost_data(key, replica, state, view.versions[key[1]])

    async def reconcile(self) -> None:
        async with self._lock:
            views = await asyncio.to_thread(self._read_state)
            self._adding = await self._added_by_reassignments()
            await self._apply(views)

    async def _added_by_reassignments(self) -> set[tuple[str, int]]:
        """The partitions a pending reassignment adds to this broker: their fetches are
        throttled until they are in the ISR (``FollowerPath.active_throttle``). Read after the
        states: the znode is written before the state that adds the replica."""
        if self._throttle is None:
            return set()
        try:
            pending = await asyncio.to_thread(reassignment_store.pending, self._session)
        except LiftlogError as exc:
            log.warning("cannot read pending reassignments: %s", exc.message)
            return self._adding
        me = self.config.broker_id
        return {
            (item.stream, item.partition)
            for item in pending
            if me in item.target_replicas and me not in item.original_replicas
        }

    def _read_state(self) -> dict[str, StreamView]:
        views = {}
        for record in self._store.list():
            states = self._store.partition_states(record.spec.name)
            views[record.spec.name] = StreamView(
                record,
                {p: state for p, (state, _v) in states.items()},
                {p: version for p, (_s, version) in states.items()},
            )
        return views

    async def _apply(self, views: dict[str, StreamView]) -> None:
        desired = self._desired(views)
        for key in [k for k in self.replicas if k not in desired]:
            await self._remove(key, views)
        for key, (view, state) in desired.items():
            await self._ensure(key, view, state)
        self.streams = views
        await asyncio.to_thread(self._remove_stray_dirs, views)

    def _desired(
        self, views: dict[str, StreamView]
    ) -> dict[tuple[str, int], tuple[StreamView, PartitionState]]:
        """Every partition with a replica on this broker, whatever its role."""
        me = self.config.broker_id
        return {
            (name, p): (view, state)
            for name, view in views.items()
            for p, state in view.states.items()
            if me in state.replicas
        }

    async def _ensure(self, key: tuple[str, int], view: StreamView, state: PartitionState) -> None:
        if key not in self.replicas and partition_dir(self._data_dir, view.record, key[1]).exists():
            self._restart_pending.add(key)  # an earlier incarnation of this broker held it
        replica = await self._open_replica(key, view, state)
        replica.adopt_stream(view.record.spec, view.record.read_only)
        replica.idle.adopt(key[1] in view.record.idle_paused_partitions)
        state, version = await self._guard_lost_data(key, replica, state, view.versions[key[1]])
        if key in self._restart_pending:
            state, version = await self._guard_restarted_leadership(key, replica, state, version)
            self._restart_pending.discard(key)
        throttled = key in self._adding  # set before a new follower's fetcher starts
        replica.follower_path.reassignment_throttle = self._throttle if throttled else None
        await replica.apply_state(state, version, self._nats(), view.record.paused, self.cluster)

    async def _open_replica(
        self, key: tuple[str, int], view: StreamView, state: PartitionState
    ) -> PartitionReplica:
        replica = self.replicas.get(key)
        if replica is not None:
            if replica.spec.encryption and replica.cipher is None:
                replica.cipher = await self._partition_cipher(replica.spec, key[1])
            return replica
        record = view.record
        replica = PartitionReplica(
            cipher=await self._partition_cipher(record.spec, key[1]),
            spec=record.spec,
            partition=key[1],
            directory=partition_dir(self._data_dir, record, key[1]),
            config=self.config,
            metrics=self._metrics,
            intake=self._intake,
            leader_epoch=-1,
            isr=list(state.isr),
            replicas=tuple(state.replicas),
            leader_id=state.leader,
            created_at_ms=record.created_at_ms,
            lake_identity=self._lake_identity,
            clock=self._clock,
        )
        replica.isr_writer = self._isr_writer(key)
        replica.idle.marker = self._idle_marker(key)
        replica.writes.recorded_elsewhere = functools.partial(self.recorded_elsewhere, key[0])
        replica.writes.value_checker = self.value_checker
        replica.writes.dead_letters = self.dead_letters
        replica.schemas = self.schemas
        if self.publish_check is not None:
            replica.writes.publisher_refusal = functools.partial(self.publish_check, key[0])
        await replica.open()
        self.replicas[key] = replica
        return replica

    async def _partition_cipher(self, spec: StreamSpec, partition: int) -> ValueCipher | None:
        """An encrypted partition's value cipher, its data key unwrapped on this node. None
        (clear stream, or no key: the replica still replicates the ciphertext bytes, but
        refuses writes and reads until a reconcile finds the key)."""
        if not spec.encryption:
            return None
        try:
            return await asyncio.to_thread(
                load_cipher, self._session, self.key_provider, spec.name, partition
            )
        except LiftlogError as exc:
            log.error("no data key for %s/%d: %s", spec.name, partition, exc.message)
            return None

    async def _guard_lost_data(
        self, key: tuple[str, int], replica: PartitionReplica, state: PartitionState, version: int
    ) -> tuple[PartitionState, int]:
        """The state to take a role from, once a replica that lost durable data is out of the
        ISR (KIP-966: a replica that may lack committed records is not electable).

        While this incarnation keeps it out, only the leader can put it back, after a fetch at
        or past the HW: then it is repaired and the loss is cleared. A sole replica has no
        other copy to protect or repair from: it keeps its role.
        """
        log_ = replica.open_log
        loss = log_.recovery_loss if log_ is not None else None
        if log_ is None or loss is None:
            return state, version
        me = self.config.broker_id
        sole_replica = state.replicas == (me,)
        if key in self._left_isr or sole_replica:
            if me in state.isr:
                await asyncio.to_thread(log_.clear_recovery_loss)
                self._left_isr.discard(key)
                _log_repaired(key, loss, sole_replica=sole_replica)
            return state, version
        return await self._leave_isr(key, loss, (state, version))

    async def _guard_restarted_leadership(
        self, key: tuple[str, int], replica: PartitionReplica, state: PartitionState, version: int
    ) -> tuple[PartitionState, int]:
        """The state to lead from when this process, holding a replica an earlier incarnation
        held, finds itself named leader: that incarnation may have led this very epoch and
        lost an unflushed tail its followers copied (recovery may even have cut every record
        of the epoch, so the log's epochs cannot tell), so it leads again at a new epoch
        (``coordinator.isr.bump_epoch_after_restart``). A lost race leaves the replica
        without a role: UnavailableError, and the reconcile is retried."""
        log_ = replica.open_log
        me = self.config.broker_id
        if log_ is None or state.leader != me:
            return state, version
        try:
            bumped, new_version = await asyncio.to_thread(
                bump_epoch_after_restart, self._session, key[0], key[1], me, state.leader_epoch
            )
        except VersionConflictError as exc:
            raise UnavailableError(
                f"{key[0]}/{key[1]}: cannot start a new leader epoch yet: {exc.message}"
            ) from exc
        except (StreamNotFoundError, PartitionNotFoundError):
            return state, version  # deleted meanwhile: the next reconcile removes the replica
        if bumped != dataclasses.replace(state, leader_epoch=state.leader_epoch + 1):
            return bumped, new_version  # the state moved on meanwhile: nothing was written
        log.warning(
            "%s/%d: restarted as the leader of epoch %d, which it already wrote in: leading "
            "at epoch %d so that followers cut whatever this log lost (LEO %d)",
            key[0],
            key[1],
            state.leader_epoch,
            bumped.leader_epoch,
            log_.log_end_offset,
        )
        return bumped, new_version

    async def _leave_isr(
        self, key: tuple[str, int], loss: RecoveryLoss, current: tuple[PartitionState, int]
    ) -> tuple[PartitionState, int]:
        """Take this broker out of the partition's ISR (conditional write, see
        ``coordinator.isr.leave_isr_for_data_loss``). A failed write leaves the replica
        without a role: UnavailableError, and the reconcile is retried."""
        try:
            state, version = await asyncio.to_thread(
                leave_isr_for_data_loss, self._session, key[0], key[1], self.config.broker_id
            )
        except VersionConflictError as exc:
            raise UnavailableError(
                f"{key[0]}/{key[1]}: cannot leave the ISR yet: {exc.message}"
            ) from exc
        except (StreamNotFoundError, PartitionNotFoundError):
            return current  # deleted meanwhile: the next reconcile removes the replica
        self._left_isr.add(key)
        log.warning(
            "%s/%d: recovery lost durable offsets %d..%d: out of the ISR (leader %d, leader "
            "epoch %d, ISR %s); it will not lead until it has caught up from a leader",
            key[0],
            key[1],
            loss.first_lost_offset,
            loss.durable_end_offset,
            state.leader,
            state.leader_epoch,
            list(state.isr),
        )
        return state, version

    def _isr_writer(self, key: tuple[str, int]) -> IsrWriter:
        async def write(
            expected: PartitionState, version: int, new_isr: list[int]
        ) -> tuple[PartitionState, int]:
            # the leader's writer awaits this: refuse at once rather than wait for a reconnect
            if not self._session.connected:
                raise ZkNotSentError("not connected to ZooKeeper: the ISR change was not sent")
            return await asyncio.to_thread(
                update_isr, self._session, key[0], key[1], expected, version, new_isr
            )

        return write

    def _idle_marker(self, key: tuple[str, int]) -> IdleMarker:
        async def mark(idle: bool) -> None:
            if not self._session.connected:  # refuse at once rather than wait for a reconnect
                raise ZkNotSentError("not connected to ZooKeeper: the idle mark was not sent")
            await asyncio.to_thread(self._store.set_idle_paused, key[0], key[1], idle)

        return mark

    def recorded_elsewhere(self, stream: str, subject: str) -> bool:
        """Whether an active (neither paused nor read-only) stream other than ``stream``
        records ``subject``, as of the last reconcile (every node watches every stream)."""
        return any(
            subject_matches(view.record.spec.partition_subject(p), subject)
            for name, view in self.streams.items()
            if name != stream and not view.record.paused and not view.record.read_only
            for p in range(view.record.spec.partitions)
        )

    def fence_leaders(self, reason: str | None) -> None:
        """The ZooKeeper session is in doubt (reason) or confirmed again (None)."""
        for replica in self.replicas.values():
            replica.fence(reason)

    async def _remove(self, key: tuple[str, int], views: dict[str, StreamView]) -> None:
        replica = self.replicas.pop(key)
        self._left_isr.discard(key)
        view = views.get(key[0])
        same_stream = view is not None and view.record.created_at_ms == replica.created_at_ms
        if not same_stream:
            log.info("stream %s was deleted: removing partition %d's data", key[0], key[1])
        else:
            # Kafka's StopReplica(delete=true): a reassignment moved the partition away.
            log.info("%s/%d was reassigned off this broker: removing its data", key[0], key[1])
        await replica.delete()

    def _remove_stray_dirs(self, views: dict[str, StreamView]) -> None:
        """Delete data of streams that no longer exist (deleted while this node was down)."""
        root = self._data_dir / STREAMS_DIR
        if not root.is_dir():
            return
        keep = {f"{v.record.spec.name}@{v.record.created_at_ms}": v for v in views.values()}
        for child in root.iterdir():
            if child.is_dir() and child.name not in keep:
                log.info("removing data of deleted stream incarnation %s", child.name)
                shutil.rmtree(child, ignore_errors=True)
            elif child.is_dir():
                self._remove_reassigned_dirs(child, keep[child.name])

    def _remove_reassigned_dirs(self, stream_dir: Path, view: StreamView) -> None:
        """Delete partitions reassigned off this broker while it was down."""
        me = self.config.broker_id
        for child in stream_dir.iterdir():
            state = view.states.get(int(child.name)) if child.name.isdigit() else None
            if child.is_dir() and state is not None and me not in state.replicas:
                log.info("removing data of %s: reassigned off this broker", child)
                shutil.rmtree(child, ignore_errors=True)

    async def close(self) -> None:
        async with self._lock:
            for key in list(self.replicas):
                await self.replicas.pop(key).close()


def _log_repaired(key: tuple[str, int], loss: RecoveryLoss, *, sole_replica: bool) -> None:
    if sole_replica:
        log.warning(
            "%s/%d: recovery lost durable offsets %d..%d and no other replica exists: it keeps "
            "serving what is left",
            key[0],
            key[1],
            loss.first_lost_offset,
            loss.durable_end_offset,
        )
        return
    log.info(
        "%s/%d: back in the ISR after losing offsets %d..%d at recovery (it caught up from the "
        "leader, or an operator elected it uncleanly): loss cleared",
        key[0],
        key[1],
        loss.first_lost_offset,
        loss.durable_end_offset,
    )
