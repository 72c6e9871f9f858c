"""Local retention of one partition replica, bounded by what the lake already holds.

The stream's limits (age, bytes, messages) pick old sealed segments; with the lake enabled only
those wholly below the lake offset may go, so a reader below the log start finds every record
in the lake. A leader knows the lake offset from its exporter; a follower reads the table
itself, and only when the limits alone would delete something (reading a table costs).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from ingest.lake.exporter import in_lake_thread
from ingest.lake.identity import LakeIdentity
from ingest.metrics import NodeMetrics
from spark_log.errors import LiftlogError
from spark_log.lake import LakeTable
from spark_log.lake.storage import LakeStorage
from spark_log.log import PartitionLog
from spark_log.log.retention import RetentionLimits
from spark_log.stream_spec import StreamSpec

log = logging.getLogger("liftlog.retention")


class RetentionRunner:
    """Applies a stream's retention limits to one replica's log."""

    def __init__(
        self,
        *,
        spec: StreamSpec,
        partition: int,
        log_: Callable[[], PartitionLog],
        lake_enabled: bool,
        table_uri: str | None,
        lake_offset: Callable[[], int | None],
        lake_identity: LakeIdentity | None,
        metrics: NodeMetrics,
        storage: LakeStorage | None = None,
    ) -> None:
        self._spec = spec
        self._partition = partition
        self._log = log_
        self._lake_enabled = lake_enabled
        self._table_uri = table_uri
        self._lake_offset = lake_offset
        self._lake_identity = lake_identity
        self._storage = storage
        self._checks = metrics.retention_checks.labels(spec.name, str(partition))

    def adopt_spec(self, spec: StreamSpec) -> None:
        """Altered retention limits apply from the next check on."""
        self._spec = spec

    @property
    def _name(self) -> str:
        return f"{self._spec.name}/{self._partition}"

    @property
    def limits(self) -> RetentionLimits:
        spec = self._spec
        return RetentionLimits(spec.retention_ms, spec.retention_bytes, spec.retention_messages)

    @property
    def configured(self) -> bool:
        """Whether the stream has any retention limit at all."""
        limits = self.limits
        return (
            limits.retention_ms is not None
            or limits.retention_bytes is not None
            or limits.retention_messages is not None
        )

    async def apply(self) -> int:
        """Delete old sealed segments per the stream's limits; returns how many went."""
        if not self.configured:
            return 0
        lake_bound = await self.lake_bound()
        if self._lake_enabled and lake_bound is None:
            return 0  # the lake cannot say what it holds right now: keep everything
        self._checks.inc()
        spec, log_ = self._spec, self._log()
        deleted = await asyncio.get_running_loop().run_in_executor(
            None,
            lambda: log_.delete_old_segments(
                retention_ms=spec.retention_ms,
                retention_bytes=spec.retention_bytes,
                retention_messages=spec.retention_messages,
                max_deletable_offset=lake_bound,
            ),
        )
        if deleted:
            log.info(
                "%s: retention deleted %d segment(s); log start offset now %d",
                self._name,
                deleted,
                log_.log_start_offset,
            )
        return deleted

    async def lake_bound(self) -> int | None:
        """The lake offset retention must stay below: the exporter's on a leader, the
        table's own on a follower (None with the lake disabled, or if the table is
        unreachable; a never-exported partition holds nothing: its log start)."""
        if self._table_uri is None:
            return None
        lake_offset = self._lake_offset()
        if lake_offset is not None:
            return lake_offset
        log_ = self._log()
        if log_.deletable_segment_count(self.limits) == 0:
            return log_.log_start_offset  # nothing to delete: the lake need not be read
        if not await self._lake_is_the_clusters():
            return None
        return await self._table_bound(self._table_uri, log_)

    async def _table_bound(self, uri: str, log_: PartitionLog) -> int | None:
        table = LakeTable(uri, self._spec.name, self._storage)
        try:
            offsets = await in_lake_thread(table.exported_offsets, self._partition + 1)
        except LiftlogError as exc:
            log.warning(
                "%s: retention skipped, the lake is unreadable: %s", self._name, exc.message
            )
            return None
        exported = offsets[self._partition]
        return exported if exported is not None else log_.log_start_offset

    async def _lake_is_the_clusters(self) -> bool:
        """A follower trusts its lake's table for retention only if the lake is the cluster's:
        a stray lake's table could claim offsets the real lake never received."""
        if self._lake_identity is None:
            return True
        try:
            await in_lake_thread(self._lake_identity.verify)
        except LiftlogError as exc:
            log.warning("%s: retention skipped, the lake is not verified: %s", self._name, exc)
            return False
        return True
