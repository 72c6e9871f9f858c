"""One version of a stream's Delta table as a reader needs it: which Parquet files hold which
offsets of which partition, and each partition's lake offset.

Everything comes from one snapshot, so the files and the lake offsets agree: what a reader
takes from the lake ends exactly where the lake offset says. Only the Delta log is read here
(add actions with their statistics); readers later open just the Parquet files they need
(``spark_log.lake.range_read``). deltalake's errors become LakeFileReadError here. The Spark
source plans with it, and the nodes' lake read tier caches it per stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from spark_log.lake.errors import LakeFileReadError
from spark_log.lake.layout import ArrowRow, app_id, file_location, to_micros
from spark_log.lake.storage import LakeStorage

if TYPE_CHECKING:
    from deltalake import DeltaTable

MAX_OFFSET = 2**63 - 1
_UNSUPPORTED_READER_FEATURES = frozenset({"deletionVectors", "columnMapping"})
"""Features that would make reading the listed Parquet files as they are wrong (delta-rs,
Liftlog's writer, uses neither)."""


@dataclass(frozen=True)
class LakeFile:
    """One Parquet file of one partition with the offset and time range its stats give."""

    path: str
    partition: int
    min_offset: int
    max_offset: int
    min_timestamp_us: int | None
    max_timestamp_us: int | None
    records: int

    def overlaps(self, lo: int, hi: int) -> bool:
        """Whether offsets ``[lo, hi)`` may have rows in this file."""
        return self.min_offset < hi and self.max_offset >= lo


@dataclass(frozen=True)
class LakeView:
    uri: str
    version: int
    lake_offsets: dict[int, int]
    """Per partition: the first offset not in the lake (0 when never exported)."""
    files: dict[int, tuple[LakeFile, ...]]
    """Per partition, sorted by first offset."""
    storage: LakeStorage | None = None
    """How to open the files (the store's options; None: pyarrow's defaults)."""

    def lake_offset(self, partition: int) -> int:
        return self.lake_offsets.get(partition, 0)

    def files_overlapping(self, partition: int, lo: int, hi: int) -> tuple[LakeFile, ...]:
        return tuple(f for f in self.files.get(partition, ()) if f.overlaps(lo, hi))

    def first_offset(self, partition: int) -> int | None:
        """The smallest offset the lake holds for ``partition`` (None: no file)."""
        files = self.files.get(partition, ())
        return min(f.min_offset for f in files) if files else None


def load_lake_view(
    uri: str, stream: str, partitions: int, storage: LakeStorage | None = None
) -> LakeView | None:
    """The table's latest version; None when no table exists yet (nothing exported).
    ``storage``: the lake's store options (an ``s3://`` lake's endpoint and credentials)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError, TableNotFoundError

    try:
        options = (storage or LakeStorage(uri)).at(uri).delta_options()
        if not DeltaTable.is_deltatable(uri, options):
            return None
        table = DeltaTable(uri, storage_options=options)
        _check_protocol(table, uri)
        actions = pa.table(table.get_add_actions(flatten=True))
        offsets = {p: table.transaction_version(app_id(stream, p)) or 0 for p in range(partitions)}
        version = table.version()
    except TableNotFoundError:
        return None
    except (DeltaError, OSError, ValueError, pa.ArrowException) as exc:
        raise LakeFileReadError(f"cannot read the lake table {uri} of {stream}: {exc}") from exc
    return LakeView(uri, version, offsets, _files_by_partition(uri, actions), storage)


def _check_protocol(table: DeltaTable, uri: str) -> None:
    features = set(table.protocol().reader_features or ())
    unsupported = features & _UNSUPPORTED_READER_FEATURES
    if unsupported:
        raise LakeFileReadError(
            f"the lake table {uri} uses {sorted(unsupported)}, which cannot be read from "
            "Parquet directly"
        )


def _files_by_partition(uri: str, actions: pa.Table) -> dict[int, tuple[LakeFile, ...]]:
    by_partition: dict[int, list[LakeFile]] = {}
    for row in actions.to_pylist():
        lake_file = _lake_file(uri, row)
        by_partition.setdefault(lake_file.partition, []).append(lake_file)
    return {p: tuple(sorted(fs, key=lambda f: f.min_offset)) for p, fs in by_partition.items()}


def _lake_file(uri: str, row: ArrowRow) -> LakeFile:
    """A file from its add action; missing stats make it cover every offset (read, filtered)."""
    min_offset = row.get("min.offset")
    max_offset = row.get("max.offset")
    return LakeFile(
        path=file_location(uri, row["path"]),
        partition=int(row["partition.partition"]),
        min_offset=0 if min_offset is None else int(min_offset),
        max_offset=MAX_OFFSET if max_offset is None else int(max_offset),
        min_timestamp_us=to_micros(row.get("min.timestamp")),
        max_timestamp_us=to_micros(row.get("max.timestamp")),
        records=int(row.get("num_records") or 0),
    )
