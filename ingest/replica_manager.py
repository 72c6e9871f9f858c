"""Makes the replicas this node hosts match what ZooKeeper says (Kafka's ReplicaManager).

ZooKeeper watches only *trigger* a reconcile; the reconcile re-reads the whole state, so a
missed or coalesced watch event can never leave a replica in the wrong role.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coordinator.isr import update_isr
from coordinator.streams import StreamStore
from coordinator.zk import ZkSession
from coordinator.znodes import PartitionState, StreamRecord
from ingest.metrics import NodeMetrics
from ingest.partition import IsrWriter, PartitionReplica
from spark_log.config import NodeConfig
from spark_log.errors import NotLeaderError, PartitionNotFoundError, StreamNotFoundError
from spark_log.replication import cluster_token

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
        publish: Callable[[str, bytes], Awaitable[None]],
        nats: Callable[[], Any],
        session: ZkSession,
    ) -> None:
        self.config = config
        self._store = store
        self._session = session
        self._metrics = metrics
        self._publish = publish
        self._nats = nats
        self._data_dir = Path(config.data_dir)
        self.replicas: dict[tuple[str, int], PartitionReplica] = {}
        self.streams: dict[str, StreamView] = {}
        self._lock = asyncio.Lock()
        self.cluster = cluster_token(config.zk_root)

    # ----------------------------------------------------------------- lookups

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

    async def reconcile(self) -> None:
        async with self._lock:
            views = await asyncio.to_thread(self._read_state)
            await self._apply(views)

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
        replica = self.replicas.get(key)
        if replica is None:
            record = view.record
            replica = PartitionReplica(
                spec=record.spec,
                partition=key[1],
                directory=partition_dir(self._data_dir, record, key[1]),
                config=self.config,
                metrics=self._metrics,
                publish=self._publish,
                leader_epoch=-1,
                isr=list(state.isr),
                replicas=tuple(state.replicas),
                leader_id=state.leader,
            )
            replica.isr_writer = self._isr_writer(key)
            await replica.open()
            self.replicas[key] = replica
        await replica.apply_state(
            state, view.versions[key[1]], self._nats(), view.record.paused, self.cluster
        )

    def _isr_writer(self, key: tuple[str, int]) -> IsrWriter:
        async def write(
            expected: PartitionState, version: int, new_isr: list[int]
        ) -> tuple[PartitionState, int]:
            return await asyncio.to_thread(
                update_isr, self._session, key[0], key[1], expected, version, new_isr
            )

        return write

    def fence_leaders(self, reason: str | None) -> None:
        """The ZooKeeper session is in doubt (reason) or confirmed again (None)."""
        for replica in self.replicas.values():
            replica.fence(reason)

    async def _remove(self, key: tuple[str, int], views: dict[str, StreamView]) -> None:
        replica = self.replicas.pop(key)
        view = views.get(key[0])
        same_stream = view is not None and view.record.created_at_ms == replica_created(replica)
        if same_stream:
            await replica.close()
        else:
            log.info("stream %s was deleted: removing partition %d's data", key[0], key[1])
            await replica.delete()

    def _remove_stray_dirs(self, views: dict[str, StreamView]) -> None:
        """Delete data of streams that no longer exist (deleted while this node was down)."""
        root = self._data_dir / STREAMS_DIR
        if not root.is_dir():
            return
        keep = {f"{v.record.spec.name}@{v.record.created_at_ms}" for v in views.values()}
        for child in root.iterdir():
            if child.is_dir() and child.name not in keep:
                log.info("removing data of deleted stream incarnation %s", child.name)
                shutil.rmtree(child, ignore_errors=True)

    async def close(self) -> None:
        async with self._lock:
            for key in list(self.replicas):
                await self.replicas.pop(key).close()


def replica_created(replica: PartitionReplica) -> int:
    """The stream incarnation a replica belongs to, from its directory name."""
    return int(replica.directory.parent.name.rsplit("@", 1)[1])
