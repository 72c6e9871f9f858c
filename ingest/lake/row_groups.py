"""Decoded lake row groups, kept for the consumer that reads on from where it stopped.

A lake file is decoded a whole row group at a time (Parquet cannot decode part of one), and a
row group holds up to 128k records, while a consumer fetch asks for a thousand or so. Without
a cache a consumer reading a file page by page would decode the same row group for every
page. So the tier keeps the row groups it decoded, each sorted by offset (a file's rows need
not be in offset order: delta-rs's writer may reorder its input), in an LRU bounded by bytes;
a page is then a binary search and a zero-copy slice. Lake files are immutable (every write
is a new file name), so an entry never goes stale: a file a compaction replaced is read from
here only while the tier's cached snapshot still lists it, as it would be without a vacuum.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from spark_log.crypto.parquet_kms import PartitionFileCrypto
from spark_log.errors import LiftlogError
from spark_log.lake import range_read
from spark_log.lake.errors import LakeFileGoneError, LakeFileReadError
from spark_log.lake.storage import LakeStorage

DEFAULT_CACHE_BYTES = 64 * 1024 * 1024
"""What the decoded row groups of one node may hold: a few row groups of ordinary records, so
each consumer reading the lake keeps the one it is in."""
METADATA_ENTRIES = 1024
"""Footers kept (a few kB each), so a page from a cached row group opens no file at all."""


@dataclass(frozen=True)
class LakeFileRef:
    """One lake file and how to open it."""

    path: str
    storage: LakeStorage | None
    crypto: PartitionFileCrypto | None


@dataclass(frozen=True)
class _Group:
    table: pa.Table
    """One row group's rows sorted by offset, in one chunk."""
    offsets: np.ndarray
    """Its ``offset`` column, for the binary search."""

    @staticmethod
    def of(rows: pa.Table) -> _Group:
        table = rows.combine_chunks()
        offsets = table.column("offset").to_numpy()
        if len(offsets) > 1 and not bool(np.all(offsets[1:] > offsets[:-1])):
            table = table.sort_by("offset").combine_chunks()
            offsets = table.column("offset").to_numpy()
        return _Group(table, offsets)

    def slice(self, start: int, end: int) -> pa.Table:
        """The rows with ``start <= offset < end`` (zero-copy)."""
        lo = int(np.searchsorted(self.offsets, start, side="left"))
        hi = int(np.searchsorted(self.offsets, end, side="left"))
        return self.table.slice(lo, hi - lo)


class RowGroupCache:
    """Row groups of lake files, decoded and sorted by offset, least recently used evicted."""

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self._max_bytes = max_bytes
        self._groups: OrderedDict[tuple[str, int], _Group] = OrderedDict()
        self._metadata: OrderedDict[str, pq.FileMetaData] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def rows(self, ref: LakeFileRef, start: int, end: int) -> list[pa.Table]:
        """The file's rows with ``start <= offset < end``, one sorted table per row group the
        range touches (blocking). LakeFileGoneError when the file no longer exists,
        LakeFileReadError for any other failure."""
        try:
            return self._rows(ref, start, end)
        except FileNotFoundError as exc:
            raise LakeFileGoneError(f"lake file {ref.path} is gone ({exc})") from exc
        except LakeFileReadError:
            raise
        except (OSError, pa.ArrowException, LiftlogError) as exc:
            raise LakeFileReadError(f"cannot read lake file {ref.path}: {exc}") from exc

    def _rows(self, ref: LakeFileRef, start: int, end: int) -> list[pa.Table]:
        parquet: pq.ParquetFile | None = None
        metadata = self._cached_metadata(ref.path)
        if metadata is None:
            parquet = range_read.open_file(ref.path, ref.storage, ref.crypto)
            metadata = parquet.metadata
            self._remember_metadata(ref.path, metadata)
        whole, cut = range_read.row_groups(metadata, start, end)
        out = []
        for index in sorted(whole + cut):
            group = self._cached_group(ref.path, index)
            if group is None:
                if parquet is None:
                    parquet = range_read.open_file(ref.path, ref.storage, ref.crypto)
                group = _Group.of(parquet.read_row_group(index))
                self._remember_group(ref.path, index, group)
            out.append(group.slice(start, end))
        return out

    def _cached_metadata(self, path: str) -> pq.FileMetaData | None:
        with self._lock:
            metadata = self._metadata.get(path)
            if metadata is not None:
                self._metadata.move_to_end(path)
            return metadata

    def _remember_metadata(self, path: str, metadata: pq.FileMetaData) -> None:
        with self._lock:
            self._metadata[path] = metadata
            while len(self._metadata) > METADATA_ENTRIES:
                self._metadata.popitem(last=False)

    def _cached_group(self, path: str, index: int) -> _Group | None:
        with self._lock:
            group = self._groups.get((path, index))
            if group is not None:
                self._groups.move_to_end((path, index))
            return group

    def _remember_group(self, path: str, index: int, group: _Group) -> None:
        size = group.table.nbytes
        if size > self._max_bytes:
            return  # larger than the whole cache: decoded again next time
        with self._lock:
            if (path, index) in self._groups:
                return
            self._groups[(path, index)] = group
            self._bytes += size
            while self._bytes > self._max_bytes:
                _key, evicted = self._groups.popitem(last=False)
                self._bytes -= evicted.table.nbytes
