"""The lake as a read tier: consumer reads below the local log start, served from the
partition's Delta table (as Kafka's tiered storage serves segments from the remote tier).

Retention deletes only segments the lake already holds (``spark_log.log.retention``), so the
history below ``log_start_offset`` is in the table. A lake read covers ``[offset,
min(log_start, offset + max_records))`` and never crosses the log start: the next fetch, at
the ``next_offset`` the answer carries, continues in the local log, so the switch-over has no
gap and no duplicate. A key-compacted lake has offset gaps, so a range may hold fewer rows
than it spans, or none: ``next_offset`` is then the range's end, not the last row + 1.

The Delta snapshot (files per partition with their offset statistics) is cached per table for
``LAKE_VIEW_TTL_S`` and loaded again sooner when a read wants an offset the snapshot does not
reach yet, or a file it lists has vanished (a compaction replaced it and a vacuum deleted it).
All Delta and Parquet I/O runs on the lake's threads (``ingest.lake.exporter.in_lake_thread``).

A typed table's rows that did not keep their raw value are served with the value rebuilt from
their columns and schema id (``spark_log.lake.typed_reencode``), as the record was stored.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ingest.lake.exporter import in_lake_thread
from ingest.lake.row_groups import DEFAULT_CACHE_BYTES, LakeFileRef, RowGroupCache
from spark_log.crypto.parquet_kms import PartitionFileCrypto
from spark_log.errors import OffsetOutOfRangeError
from spark_log.lake import range_read
from spark_log.lake.errors import LakeFileGoneError, LakeValueRebuildError
from spark_log.lake.layout import MICROS_PER_MILLI
from spark_log.lake.storage import LakeStorage
from spark_log.lake.typed_reencode import SchemaById, with_raw_values
from spark_log.lake.typed_values import LoadedSchemaLike
from spark_log.lake.view import LakeView, load_lake_view
from spark_log.log.fetch_table import FETCH_SCHEMA

LAKE_VIEW_TTL_S = 5.0
"""How long a loaded snapshot serves reads within its range: files a compaction commits in
the meantime are seen this much later."""
FORGET_AFTER_TTLS = 12
"""A snapshot not loaded again for this many TTLs is dropped on the next load."""


@dataclass(frozen=True)
class LakePartition:
    """Where one partition's lake history is and how to open its files."""

    stream: str
    partition: int
    partitions: int
    table_uri: str
    storage: LakeStorage
    crypto: PartitionFileCrypto | None = None
    """An encrypted stream's partition keys (its files are Parquet modular-encrypted)."""
    schemas: SchemaById | None = None
    """The schema registry, which rebuilds the values of a typed table that did not keep
    them (``spark_log.lake.typed_reencode``); None: the node has none."""


@dataclass(frozen=True)
class LakeRead:
    """Rows of one lake range in FETCH_SCHEMA, and where the next read continues."""

    table: pa.Table
    next_offset: int


@dataclass(frozen=True)
class _Cached:
    view: LakeView | None
    loaded_at: float


class LakeTier:
    """Reads of lake ranges for the fetch route; one per node, the snapshot cached per table."""

    def __init__(
        self,
        ttl_s: float = LAKE_VIEW_TTL_S,
        clock: Callable[[], float] = time.monotonic,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        """``cache_bytes``: what decoded row groups may hold (``ingest.lake.row_groups``)."""
        self._ttl_s = ttl_s
        self._clock = clock
        self._views: dict[str, _Cached] = {}
        self._row_groups = RowGroupCache(cache_bytes)

    async def read(
        self, part: LakePartition, offset: int, end: int, max_records: int, max_bytes: int
    ) -> LakeRead:
        """Rows with ``offset <= o < end`` (``end``: the log start), at most ``max_records``
        and about ``max_bytes`` of keys and values (at least one row). OffsetOutOfRangeError
        when the lake does not reach ``offset``."""
        return await in_lake_thread(self._read, part, offset, end, max_records, max_bytes)

    async def first_offset(self, part: LakePartition) -> int | None:
        """The smallest offset the lake holds for the partition (None: nothing)."""
        view = await in_lake_thread(self._view, part, None, False)
        return None if view is None else view.first_offset(part.partition)

    async def offset_for_timestamp(
        self, part: LakePartition, timestamp_ms: int, below: int
    ) -> int | None:
        """The first lake offset below ``below`` stamped at or after ``timestamp_ms``."""
        return await in_lake_thread(self._offset_for_timestamp, part, timestamp_ms, below)

    # ----------------------------------------------------------------- lake threads

    def _read(
        self, part: LakePartition, offset: int, end: int, max_records: int, max_bytes: int
    ) -> LakeRead:
        try:
            return self._read_once(part, offset, end, max_records, max_bytes, False)
        except LakeFileGoneError:
            return self._read_once(part, offset, end, max_records, max_bytes, True)

    def _read_once(
        self,
        part: LakePartition,
        offset: int,
        end: int,
        max_records: int,
        max_bytes: int,
        reload: bool,
    ) -> LakeRead:
        view = self._view(part, offset, reload)
        if view is None or offset >= view.lake_offset(part.partition):
            raise OffsetOutOfRangeError(
                f"offset {offset} of {part.stream}/{part.partition} is below the log start "
                "and not in the lake"
            )
        stop = min(end, offset + max_records, view.lake_offset(part.partition))
        files = view.files_overlapping(part.partition, offset, stop)
        refs = [LakeFileRef(f.path, view.storage, part.crypto) for f in files]
        schemas = part.schemas if part.schemas is not None else _NO_SCHEMAS
        table = _read_rows(self._row_groups, refs, offset, stop, schemas)
        return _bounded(table, stop, max_records, max_bytes)

    def _offset_for_timestamp(
        self, part: LakePartition, timestamp_ms: int, below: int
    ) -> int | None:
        try:
            return self._offset_for_timestamp_once(part, timestamp_ms, below, False)
        except LakeFileGoneError:
            return self._offset_for_timestamp_once(part, timestamp_ms, below, True)

    def _offset_for_timestamp_once(
        self, part: LakePartition, timestamp_ms: int, below: int, reload: bool
    ) -> int | None:
        timestamp_us = timestamp_ms * MICROS_PER_MILLI
        view = self._view(part, None, reload)
        if view is None:
            return None
        paths = [
            f.path
            for f in view.files.get(part.partition, ())
            if f.min_offset < below
            and (f.max_timestamp_us is None or f.max_timestamp_us >= timestamp_us)
        ]
        if not paths:
            return None
        return range_read.offset_for_timestamp(
            paths, timestamp_us, below, view.storage, part.crypto
        )

    def _view(self, part: LakePartition, wanted: int | None, reload: bool) -> LakeView | None:
        """The cached snapshot, loaded again when asked to, when older than the TTL, or when
        it does not reach ``wanted`` (exports landed since)."""
        cached = self._views.get(part.table_uri)
        now = self._clock()
        if (
            cached is not None
            and not reload
            and now - cached.loaded_at < self._ttl_s
            and not _behind(cached.view, part.partition, wanted)
        ):
            return cached.view
        view = load_lake_view(part.table_uri, part.stream, part.partitions, part.storage)
        self._forget_expired(now)
        self._views[part.table_uri] = _Cached(view, now)
        return view

    def _forget_expired(self, now: float) -> None:
        """Drop snapshots nobody read for a while (a deleted stream's table stays otherwise)."""
        for uri, cached in list(self._views.items()):
            if now - cached.loaded_at >= self._ttl_s * FORGET_AFTER_TTLS:
                self._views.pop(uri, None)


def _behind(view: LakeView | None, partition: int, wanted: int | None) -> bool:
    if wanted is None:
        return view is None
    return view is None or wanted >= view.lake_offset(partition)


def _read_rows(
    cache: RowGroupCache, files: Iterable[LakeFileRef], start: int, end: int, schemas: SchemaById
) -> pa.Table:
    """The files' rows in ``[start, end)`` in offset order, as FETCH_SCHEMA (timestamps in
    ms, as fetched); a typed file's values rebuilt from its columns when it did not keep them
    (on this lake thread: the registry may block on an id it has not loaded yet)."""
    pieces = [
        _fetch_rows(piece, schemas)
        for ref in files
        for piece in cache.rows(ref, start, end)
        if piece.num_rows
    ]
    if not pieces:
        return FETCH_SCHEMA.empty_table()
    table = pa.concat_tables(pieces)
    if len(pieces) > 1:  # row groups of a file may interleave in offsets
        table = table.sort_by("offset")
    return table


def _fetch_rows(piece: pa.Table, schemas: SchemaById) -> pa.Table:
    """One row group's rows, untyped or typed, as FETCH_SCHEMA."""
    table = with_raw_values(piece, schemas).select(FETCH_SCHEMA.names)
    timestamps = table.column("timestamp").cast(FETCH_SCHEMA.field("timestamp").type, safe=False)
    table = table.set_column(1, FETCH_SCHEMA.field("timestamp"), timestamps)
    return table.cast(FETCH_SCHEMA)


class _NoRegistry:
    """The lookup of a node without a schema registry: a typed file's values cannot be
    rebuilt there."""

    def loaded(self, schema_id: int) -> LoadedSchemaLike:
        raise LakeValueRebuildError(
            f"a typed lake row (schema id {schema_id}) did not keep its value and this node "
            "has no schema registry to rebuild it with"
        )


_NO_SCHEMAS = _NoRegistry()


def _bounded(table: pa.Table, end: int, max_records: int, max_bytes: int) -> LakeRead:
    """``table`` cut to ``max_records`` rows and about ``max_bytes`` of keys and values (at
    least one row); the next offset is the range's end unless rows were cut off."""
    keep = min(table.num_rows, max_records, _rows_within(table, max_bytes))
    if keep == table.num_rows:
        return LakeRead(table, end)
    kept = table.slice(0, keep)
    last: int = kept.column("offset")[keep - 1].as_py()
    return LakeRead(kept, last + 1)


def _rows_within(table: pa.Table, max_bytes: int) -> int:
    """How many leading rows fit ``max_bytes`` of keys and values; at least one."""
    if table.num_rows == 0:
        return 0
    sizes = pc.fill_null(pc.binary_length(table.column("value")), 0).to_numpy()
    key_sizes = pc.fill_null(pc.binary_length(table.column("key")), 0).to_numpy()
    total = np.cumsum(sizes.astype(np.int64) + key_sizes.astype(np.int64))
    return max(1, int(np.searchsorted(total, max_bytes, side="right")))
