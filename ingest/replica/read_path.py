"""Consumer reads of one partition replica: committed records only, long-polling on the HW.

Reads run concurrently in the executor and never take the write lock: a read is bounded by
the HW it saw first, and nothing below the HW is ever rewritten. A read at the HW waits for
the next HW move (or its ``wait_ms``), the way a Kafka fetch waits in the fetch purgatory.

Readers woken by the same HW move usually ask for the same thing: a thousand consumers tailing
a partition all wait at the HW and all want the records the move committed. They share one
read (one log read and one decode per distinct request, not one per reader); the shared
results are dropped at the next HW move, so they hold at most one fetch's bytes per distinct
request between two moves.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import pyarrow as pa

from ingest.metrics import NodeMetrics
from spark_log.crypto import ValueCipher
from spark_log.errors import OffsetOutOfRangeError
from spark_log.log import PartitionLog, Record, records_from_batches
from spark_log.log.fetch_table import table_from_batches


@dataclass(frozen=True, slots=True)
class _ReadKey:
    offset: int
    max_records: int
    max_bytes: int
    high_watermark: int
    arrow: bool


@dataclass(frozen=True)
class FetchResult:
    records: list[Record]
    high_watermark: int
    log_start_offset: int
    table: pa.Table | None = None
    """The records as one Arrow table (FETCH_SCHEMA) instead of ``records``, when asked."""
    next_offset: int | None = None
    """Where the next read continues, when that is not after the last record: a lake range
    (``ingest.lake.tier``) of a compacted lake may hold fewer rows than it spans, or none.
    None: the last record + 1 (or ``offset`` when there is none)."""


class ReadPath:
    """Committed reads and the HW signal they wait on."""

    def __init__(
        self,
        name: str,
        log_: Callable[[], PartitionLog],
        metrics: NodeMetrics,
        cipher: Callable[[], ValueCipher | None] = lambda: None,
    ) -> None:
        self._name = name
        self._log = log_
        self._metrics = metrics
        self._cipher = cipher
        """The partition's value cipher: encrypted values are decrypted here, on the node."""
        self._hw_event = asyncio.Event()
        self._shared: dict[_ReadKey, asyncio.Task[FetchResult]] = {}
        """Reads of woken readers, by what they asked for, until the next HW move."""

    def signal_high_watermark(self) -> None:
        """The HW moved (or the replica closes): wake every waiting read."""
        self._hw_event.set()
        self._hw_event = asyncio.Event()
        self._shared = {}

    async def fetch(
        self, offset: int, max_records: int, max_bytes: int, wait_ms: int, *, arrow: bool = False
    ) -> FetchResult:
        """Committed records from ``offset``; long-polls up to ``wait_ms`` when none exist yet.

        ``arrow`` builds ``table`` straight from the stored Arrow batches (no Record objects)."""
        log_ = self._log()
        if offset < log_.log_start_offset or offset > log_.log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {offset} is outside [{log_.log_start_offset}, {log_.log_end_offset}] "
                f"of {self._name}"
            )
        waited = offset >= log_.high_watermark and wait_ms > 0
        if waited:
            await self._wait_for_hw(wait_ms)
        log_ = self._log()
        hw = log_.high_watermark
        if offset >= hw:
            return FetchResult([], hw, log_.log_start_offset)
        if not waited:
            return await self._read(log_, offset, max_records, max_bytes, hw, arrow)
        key = _ReadKey(offset, max_records, max_bytes, hw, arrow)
        return await self._read_shared(
            key, lambda: self._read(log_, offset, max_records, max_bytes, hw, arrow)
        )

    async def _read_shared(
        self, key: _ReadKey, read: Callable[[], Awaitable[FetchResult]]
    ) -> FetchResult:
        """One read for every woken reader asking ``key``; a reader that goes away (its
        client disconnected) does not cancel the read the others wait for."""
        task = self._shared.get(key)
        if task is None:
            task = self._shared[key] = asyncio.ensure_future(read())
        return await asyncio.shield(task)

    async def _read(
        self,
        log_: PartitionLog,
        offset: int,
        max_records: int,
        max_bytes: int,
        hw: int,
        arrow: bool,
    ) -> FetchResult:
        loop = asyncio.get_running_loop()
        cipher = self._cipher()
        if arrow:
            table = await loop.run_in_executor(
                None, _read_table, log_, offset, max_records, max_bytes, hw, cipher
            )
            return FetchResult([], hw, log_.log_start_offset, table)
        records = await loop.run_in_executor(
            None, _read_records, log_, offset, max_records, max_bytes, hw, cipher
        )
        return FetchResult(records, hw, log_.log_start_offset)

    async def _wait_for_hw(self, wait_ms: int) -> None:
        self._metrics.fetch_waiters.inc()
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._hw_event.wait(), wait_ms / 1000)
        finally:
            self._metrics.fetch_waiters.dec()

    async def offset_for_timestamp(self, timestamp_ms: int) -> int:
        """The first offset at or after ``timestamp_ms``, capped by the HW."""
        log_ = self._log()
        found = await asyncio.get_running_loop().run_in_executor(
            None, log_.offset_for_timestamp, timestamp_ms
        )
        return log_.high_watermark if found is None else min(found, log_.high_watermark)


def _read_records(
    log_: PartitionLog,
    offset: int,
    max_records: int,
    max_bytes: int,
    hw: int,
    cipher: ValueCipher | None,
) -> list[Record]:
    data = log_.read(offset, max_bytes, hw)
    return records_from_batches(data, offset, hw, max_records, cipher=cipher)


def _read_table(
    log_: PartitionLog,
    offset: int,
    max_records: int,
    max_bytes: int,
    hw: int,
    cipher: ValueCipher | None,
) -> pa.Table:
    data = log_.read(offset, max_bytes, hw)
    return table_from_batches(data, offset, hw, max_records, cipher=cipher)
