"""The partition leader's lake exporter: committed records into the stream's Delta table.

One task per partition this node leads, started with the leadership and stopped with it. It
exports ``[lake_offset, HW)`` in rounds: when the unexported committed bytes reach
``lake.export_min_bytes``, when the oldest unexported record is ``lake.export_interval_s``
old, or when a flush asks for everything committed so far. Each round is one Delta commit whose
app transaction moves the partition's version from the range's start to its end, checked
against the table right before the commit (see ``spark_log.lake.table``): the table, not this
process, is the source of truth, so a new leader simply continues at the table's version.

A stream bound to a schema (``value_schema``) is exported typed (``spark_log.lake.typed_export``):
a schema change adds its columns in the same commit as the rows that bring them, so the table's
layout moves with the same exactly-once, leader-fenced series. A change the table cannot follow
fails the round like any error: the export stops there, retried, its records kept in the log,
and the error is the partition's ``last_error`` and every flush's answer until it is resolved.
An encrypted stream is never typed: its columns would hold its values in clear.

All Delta and file I/O runs on the lake's own threads, never on the event loop and never on the
default executor that appends and fsyncs use; a failing round is logged, counted and retried
with backoff, and ingest never waits for the lake.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol, TypedDict, TypeVar, TypeVarTuple, runtime_checkable

import pyarrow as pa

from ingest.clock import SYSTEM_CLOCK, Clock
from ingest.lake.cadence import ExportCadence
from ingest.lake.identity import LakeIdentity
from ingest.metrics import NodeMetrics
from ingest.replication.partition_state import Partition
from spark_log.config import LakeConfig
from spark_log.crypto import ValueCipher
from spark_log.errors import (
    KeyUnavailableError,
    LakeError,
    LiftlogError,
    NotLeaderError,
    RequestTimeoutError,
    StorageError,
)
from spark_log.lake import (
    LAKE_SCHEMA,
    LakeCommitConflictError,
    LakeRange,
    LakeSnapshot,
    LakeTable,
    read_range,
)
from spark_log.lake.encrypted_export import ExportCommit, export_encrypted
from spark_log.lake.storage import lake_storage
from spark_log.lake.typed_export import TableRows, typed_rows, untyped_rows
from spark_log.lake.typed_layout import RAW_VALUE_FIELD, TYPED_BASE_SCHEMA
from spark_log.lake.typed_values import SchemaLookup
from spark_log.log import PartitionLog
from spark_log.value_schema import ValueSchema

log = logging.getLogger("liftlog.exporter")

T = TypeVar("T")
Args = TypeVarTuple("Args")
LAKE_EXPORT_THREADS = 2
RETRY_BACKOFF_MIN_S = 0.5
IDLE_RECHECK_S = 5.0

_executor: ThreadPoolExecutor | None = None


def lake_executor() -> ThreadPoolExecutor:
    """The lake's threads, shared by every exporter of the process: a slow store or a large
    round must not occupy the default executor's threads that appends and fsyncs need."""
    global _executor
    if _executor is None:
        _executor = ThreadPoolExecutor(LAKE_EXPORT_THREADS, thread_name_prefix="lake")
    return _executor


async def in_lake_thread(fn: Callable[[*Args], T], *args: *Args) -> T:
    return await asyncio.get_running_loop().run_in_executor(lake_executor(), fn, *args)


_round_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)


def export_round_slots(limit: int) -> asyncio.Semaphore:
    """How many export rounds of this process may run at once (``lake.concurrent_exports``).

    A round holds its range three times over (log bytes, Arrow, Parquet and delta-rs's
    buffers): measured under producer batches, two rounds at once added about 100 MB to the
    node's peak RSS against one. The lake's threads stay free for tier reads meanwhile."""
    loop = asyncio.get_running_loop()
    slots = _round_slots.get(loop)
    if slots is None:
        slots = _round_slots[loop] = asyncio.Semaphore(limit)
    return slots


@runtime_checkable
class ExportSource(Protocol):
    """What an exporter needs from its replica: the log it reads, and the partition state
    each commit checks the leadership against (``Partition.leads_at``)."""

    @property
    def open_log(self) -> PartitionLog | None: ...

    @property
    def state(self) -> Partition: ...


@dataclass(frozen=True)
class ExportTarget:
    """Which partition an exporter serves, where it writes, and under which leadership."""

    stream: str
    partition: int
    table_uri: str
    broker_id: int
    leader_epoch: int
    encrypted: bool = False
    """The stream encrypts values at rest: its files are written with Parquet modular
    encryption (``spark_log.lake.encrypted_export``), never through delta-rs's writer."""


class ExportCommitMetadata(TypedDict):
    """What an export commit records under ``liftlog`` in the Delta commit's metadata."""

    stream: str
    partition: int
    start_offset: int
    end_offset: int
    broker_id: int
    leader_epoch: int


@dataclass(frozen=True)
class _Round:
    """The outcome of one round: the lake offset now, and what this round committed."""

    lake_offset: int
    lake_start_offset: int | None = None
    records: int = 0
    table_version: int | None = None
    adopted: bool = False
    seen_version: int | None = None
    """The table version ``lake_start_offset`` was read at (or committed as)."""


class PartitionExporter:
    def __init__(
        self,
        source: ExportSource,
        target: ExportTarget,
        config: LakeConfig,
        metrics: NodeMetrics,
        tracked_from: int,
        identity: LakeIdentity | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
        cipher: Callable[[], ValueCipher | None] = lambda: None,
        binding: Callable[[], ValueSchema | None] = lambda: None,
        registry: SchemaLookup | None = None,
    ) -> None:
        """``cipher``: the partition's value cipher now (an encrypted stream's; None until
        its data key is loaded, and then nothing is exported). ``binding``: the stream's
        ``value_schema`` now (None: unbound), whose values the ``registry`` decodes."""
        self._source = source
        self._cipher = cipher
        self._binding = binding
        self._registry = registry
        self.last_error: LiftlogError | None = None
        """Why the last round failed (None once a round succeeds): a stalled export says why."""
        self._clock = clock
        self._identity = identity
        self._target = target
        self._config = config
        self._storage = lake_storage(config).at(target.table_uri)
        self._table = LakeTable(target.table_uri, target.stream, self._storage)
        self._cadence = ExportCadence(
            config.export_min_bytes, int(config.export_interval_s * 1000), tracked_from
        )
        self.lake_offset: int | None = None
        self.lake_start_offset: int | None = None
        self._start_version: int | None = None  # the table version lake_start_offset is of
        self._wake = asyncio.Event()
        self._waiters: list[tuple[int, asyncio.Future[int]]] = []
        self._idle = False
        self._stop_requested = asyncio.Event()  # set by stop(), read after every await
        self._task: asyncio.Task[None] | None = None
        self._backoff_s = RETRY_BACKOFF_MIN_S
        self._metrics = metrics
        self._labels = (target.stream, str(target.partition))
        self._offset_gauge = metrics.lake_offset.labels(*self._labels)
        self._lag_gauge = metrics.lake_export_lag.labels(*self._labels)
        self._records = metrics.lake_exported_records.labels(*self._labels)
        self._commits = metrics.lake_commits.labels(*self._labels)
        self._errors = metrics.lake_export_errors.labels(*self._labels)
        self._name = f"{target.stream}/{target.partition}"

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"lake-export-{self._name}")
        self._task.add_done_callback(self._log_crash)

    async def stop(self, reason: LiftlogError) -> None:
        """Stop exporting; a round in flight on a lake thread can no longer commit (its last
        check before the commit sees the stop), flush waiters get ``reason``."""
        self._stop_requested.set()
        self._wake.set()
        self._fail_waiters(reason)
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for gauge in (self._metrics.lake_offset, self._metrics.lake_export_lag):
            with contextlib.suppress(KeyError):  # another leader reports it now
                gauge.remove(*self._labels)

    # ----------------------------------------------------------------- leader's hooks

    def appended(self, base_offset: int, next_offset: int, size_bytes: int, time_ms: int) -> None:
        """The leader's write cycle appended these offsets (cadence bookkeeping)."""
        self._cadence.appended(base_offset, next_offset, size_bytes, time_ms)

    def committed(self, high_watermark: int) -> None:
        """The HW moved: wake the exporter if a round is due, or if it sleeps with nothing
        pending (it then computes when the oldest record becomes due)."""
        lake = self.lake_offset
        if lake is None or high_watermark <= lake:
            return
        if self._idle or self._cadence.due(lake, high_watermark, self._clock.now_ms()):
            self._wake.set()

    async def export_through(self, offset: int, timeout_s: float) -> int:
        """Export now until the lake holds everything below ``offset``; the lake offset."""
        lake = self.lake_offset
        if lake is not None and lake >= offset:
            return lake
        waiter: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        entry = (offset, waiter)
        self._waiters.append(entry)
        self._wake.set()
        try:
            return await asyncio.wait_for(asyncio.shield(waiter), timeout_s)
        except TimeoutError as exc:
            raise RequestTimeoutError(
                f"{self._name}: the lake did not reach offset {offset} within {timeout_s:.0f}s "
                f"(lake offset {self.lake_offset})"
            ) from exc
        finally:
            if entry in self._waiters:
                self._waiters.remove(entry)

    # ----------------------------------------------------------------- the loop

    async def _run(self) -> None:
        while not self._stop_requested.is_set():
            try:
                await self._step()
                self._backoff_s = RETRY_BACKOFF_MIN_S
            except LakeCommitConflictError as exc:
                log.info("%s: lost a lake commit race (%s); re-reading the table", self._name, exc)
            except NotLeaderError:
                if self._stop_requested.is_set():
                    return
                await self._pause(RETRY_BACKOFF_MIN_S)  # fenced for now: the role decides
            except (LiftlogError, OSError, pa.ArrowException) as exc:
                if self._stop_requested.is_set():
                    return
                self._on_failure(exc)
                await self._pause(self._backoff_s)
                self._backoff_s = min(self._backoff_s * 2, self._config.retry_backoff_max_s)

    async def _step(self) -> None:
        if self.lake_offset is None:
            self._apply(await in_lake_thread(self._load))
            return
        lake = self.lake_offset
        log_ = self._source.open_log
        hw = log_.high_watermark if log_ is not None else lake
        self._lag_gauge.set(max(0, hw - lake))
        self._resolve_waiters()
        if self._should_export(lake, hw):
            known = (self._start_version, self.lake_start_offset)
            async with export_round_slots(self._config.concurrent_exports):
                self._apply(await in_lake_thread(self._export_round, lake, hw, known))
        else:
            await self._sleep_until_due(lake, hw)

    def _should_export(self, lake: int, hw: int) -> bool:
        if lake >= hw:
            return False
        if any(offset > lake and not waiter.done() for offset, waiter in self._waiters):
            return True
        return self._cadence.due(lake, hw, self._clock.now_ms())

    async def _sleep_until_due(self, lake: int, hw: int) -> None:
        wait_ms = self._cadence.ms_until_due(lake, hw, self._clock.now_ms())
        self._idle = wait_ms is None
        self._wake.clear()
        timeout_s = IDLE_RECHECK_S if wait_ms is None else wait_ms / 1000
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout_s)
        self._idle = False

    async def _pause(self, seconds: float) -> None:
        """Back off; only a stop ends the pause early (a flush during it waits its turn)."""
        deadline = asyncio.get_running_loop().time() + seconds
        while not self._stop_requested.is_set():
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), remaining)

    def _apply(self, outcome: _Round) -> None:
        self.last_error = None
        previous = self.lake_offset
        self.lake_offset = outcome.lake_offset
        self.lake_start_offset = outcome.lake_start_offset
        self._start_version = outcome.seen_version
        self._offset_gauge.set(outcome.lake_offset)
        self._cadence.exported(outcome.lake_offset)
        if outcome.records:
            self._records.inc(outcome.records)
            self._commits.inc()
            log.debug(
                "%s: exported %d records, lake offset %s -> %d (table version %s)",
                self._name,
                outcome.records,
                previous,
                outcome.lake_offset,
                outcome.table_version,
            )
        elif outcome.adopted and previous is not None and previous != outcome.lake_offset:
            log.info(
                "%s: the lake table says offset %d (this leader had %d); continuing there",
                self._name,
                outcome.lake_offset,
                previous,
            )
        self._resolve_waiters()

    def _resolve_waiters(self) -> None:
        lake = self.lake_offset
        if lake is None:
            return
        for offset, waiter in list(self._waiters):
            if offset <= lake and not waiter.done():
                waiter.set_result(lake)

    def _fail_waiters(self, exc: LiftlogError) -> None:
        for _offset, waiter in self._waiters:
            if not waiter.done():
                waiter.set_exception(exc)

    def _on_failure(self, exc: Exception) -> None:
        self._errors.inc()
        log.warning(
            "%s: lake export failed (retrying in %.1fs): %s", self._name, self._backoff_s, exc
        )
        error = exc if isinstance(exc, LiftlogError) else LakeError(str(exc))
        self.last_error = error
        self._fail_waiters(error)

    def _log_crash(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("%s: lake exporter stopped", self._name, exc_info=task.exception())

    # ----------------------------------------------------------------- lake threads

    def _load(self) -> _Round:
        """Make sure this is the cluster's lake and the table exists, and learn where the lake
        ends for this partition."""
        if self._identity is not None:
            self._identity.verify()
        self._table.ensure_exists(self._new_table_schema())
        snapshot = self._table.snapshot()
        return _Round(
            self._table_offset(snapshot.exported_offset(self._target.partition)),
            snapshot.first_offset(self._target.partition),
            seen_version=snapshot.version,
        )

    def _export_round(self, expected: int, hw: int, known: tuple[int | None, int | None]) -> _Round:
        """One round: check the table's version, read ``[expected, HW)`` (capped), commit.

        The partition's first lake offset comes from the files' statistics, a listing that
        grows with the table and holds the interpreter lock while it is built; it is read
        again only when someone else (compaction, lake retention, another leader) committed
        since this exporter last learnt it (``known``: the version and the offset it learnt)."""
        snapshot = self._table.snapshot()
        version = snapshot.version
        lake = self._table_offset(snapshot.exported_offset(self._target.partition))
        known_version, known_first = known
        first = (
            known_first
            if known_version == version
            else snapshot.first_offset(self._target.partition)
        )
        if lake != expected or lake >= hw:
            return _Round(lake, first, adopted=True, seen_version=version)
        if not self._still_allowed():  # fenced for now: do not even read
            raise NotLeaderError(f"no longer allowed to export {self._name}")
        log_ = self._log()
        start = self._start_offset(lake, log_)
        cipher = self._export_cipher()
        chunk = read_range(
            log_,
            self._target.partition,
            start,
            hw,
            max_records=self._config.max_records_per_file,
            max_bytes=self._config.max_bytes_per_file,
            cipher=cipher,
        )
        if not chunk.records:
            return _Round(lake, first, seen_version=version)
        committed = self._commit(snapshot, chunk, start, cipher)
        first = start if first is None else first
        # a commit that landed past another writer's leaves the start offset unknown
        seen = committed if committed == version + 1 else None
        return _Round(chunk.end_offset, first, chunk.records, committed, seen_version=seen)

    def _commit(
        self, snapshot: LakeSnapshot, chunk: LakeRange, start: int, cipher: ValueCipher | None
    ) -> int:
        """Commit the chunk against ``snapshot``: a clear stream's through delta-rs's writer,
        an encrypted stream's as a modular-encrypted file written here; the table version."""
        metadata = self._commit_metadata(start, chunk.end_offset)
        if cipher is None:
            rows = self._table_rows(snapshot, chunk.table)
            return snapshot.append(
                rows.table,
                self._target.partition,
                chunk.end_offset,
                self._still_allowed,
                metadata,
                merge_schema=rows.merge_schema,
            )
        return export_encrypted(
            snapshot,
            self._storage,
            chunk,
            cipher.file_crypto(self._target.stream, self._target.partition),
            ExportCommit(self._target.partition, self._still_allowed, metadata),
        )

    def _typed_binding(self) -> ValueSchema | None:
        """The binding this export types values by (None: exported as bytes)."""
        binding = self._binding()
        if binding is None or self._registry is None or self._target.encrypted:
            return None
        return binding

    def _new_table_schema(self) -> pa.Schema:
        """The columns the table is created with: a typed stream's value columns come with
        the first rows of each schema."""
        binding = self._typed_binding()
        if binding is None:
            return LAKE_SCHEMA
        if binding.keep_raw_value:
            return TYPED_BASE_SCHEMA.append(RAW_VALUE_FIELD)
        return TYPED_BASE_SCHEMA

    def _table_rows(self, snapshot: LakeSnapshot, rows: pa.Table) -> TableRows:
        """The range's rows as the table's: typed for a bound stream."""
        binding = self._typed_binding()
        if binding is None or self._registry is None:
            return untyped_rows(rows, snapshot.arrow_schema())
        return typed_rows(
            rows,
            snapshot.arrow_schema(),
            binding.subject,
            binding.keep_raw_value,
            self._registry,
        )

    def _export_cipher(self) -> ValueCipher | None:
        """The cipher an encrypted stream's round needs (None for a clear stream). Without
        one the round is refused: its values must never reach the lake in clear."""
        if not self._target.encrypted:
            return None
        cipher = self._cipher()
        if cipher is None:
            raise KeyUnavailableError(
                f"{self._name} is encrypted and this node has not loaded its data key yet"
            )
        return cipher

    def _table_offset(self, version: int | None) -> int:
        """The lake offset a txn version means; never exported: the log's start."""
        return version if version is not None else self._log().log_start_offset

    def _start_offset(self, lake: int, log_: PartitionLog) -> int:
        start = log_.log_start_offset
        if lake >= start:
            return lake
        log.error(
            "%s: offsets %d..%d were deleted from the log before they reached the lake; the "
            "lake continues at %d with a gap",
            self._name,
            lake,
            start - 1,
            start,
        )
        return start

    def _log(self) -> PartitionLog:
        log_ = self._source.open_log
        if log_ is None:
            raise StorageError(f"{self._name} is closed")
        return log_

    def _still_allowed(self) -> bool:
        """Asked right before a commit: still this leadership, not fenced, not stopped."""
        return not self._stop_requested.is_set() and self._source.state.leads_at(
            self._target.leader_epoch
        )

    def _commit_metadata(self, start: int, end: int) -> ExportCommitMetadata:
        return {
            "stream": self._target.stream,
            "partition": self._target.partition,
            "start_offset": start,
            "end_offset": end,
            "broker_id": self._target.broker_id,
            "leader_epoch": self._target.leader_epoch,
        }
