"""The work inside the compaction job's Spark tasks, done with pyarrow through the lake's
filesystem (``LakeStorage``): Spark never opens a lake file itself, so the job needs no Hadoop
connector for ``s3://``, ``gs://`` or ``abfss://`` lakes (those come from Maven).

Two kinds of task:

- **Key scan** (``scan_keys``, a ``mapInArrow`` over file indexes): reads only the ``offset``
  and ``key`` columns of one file of the snapshot (clear even in an encrypted stream's files,
  so a scan needs no key) and emits ``(partition, key, offset)`` of
  the rows that compaction may drop: keyed rows below the boundary. Spark aggregates these
  into the winners, ``max(offset)`` per ``(partition, key)``.
- **Partition rewrite** (``rewrite_partition``, an ``applyInArrow`` per lake partition): gets
  the partition's winners, streams the partition's files in offset order, keeps keyless rows,
  rows at or above the boundary and winners (less the tombstones past the delete retention),
  and writes them as new files into ``partition=<p>/``. A partition that lost no row writes
  nothing that stays: its files are deleted again and it reports ``rows_in == rows_out``.

Both receive plain picklable specs (the store options as a dict), shipped with the task
closure as Spark ships a Hadoop configuration.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from datasource.compaction.output import compacted_name, new_task_token
from datasource.lake_keys import LakeKeySource
from spark_log.crypto.parquet_kms import PartitionFileCrypto
from spark_log.lake.file_reader import open_parquet
from spark_log.lake.file_writer import PartitionFileWriter
from spark_log.lake.layout import FILE_SCHEMA, MICROS_PER_MILLI, PARTITION_COLUMN
from spark_log.lake.new_file import NewFile, discard_paths
from spark_log.lake.storage import LakeStorage
from spark_log.lake.tombstones import tombstones

SCAN_BATCH_ROWS = 256 * 1024
"""Rows per batch a key scan hands to Spark: two narrow columns, so large batches are cheap."""
REWRITE_BATCH_ROWS = 64 * 1024
"""Rows per batch a rewrite streams through (whole rows: memory stays at one batch)."""
NO_WINNER = -1
"""The offset of the marker row every computed partition gets, so a partition without a
single keyed row still has its rewrite task (its keyless rows must be written too)."""
KEY_SCHEMA = pa.schema(
    [
        pa.field(PARTITION_COLUMN, pa.int32(), nullable=False),
        pa.field("key", pa.binary()),
        pa.field("offset", pa.int64(), nullable=False),
    ]
)
REWRITE_SCHEMA = pa.schema(
    [
        pa.field(PARTITION_COLUMN, pa.int32()),
        pa.field("path", pa.string()),
        pa.field("size_bytes", pa.int64()),
        pa.field("modification_time_ms", pa.int64()),
        pa.field("stats_json", pa.string()),
        pa.field("rows_in", pa.int64()),
        pa.field("rows_out", pa.int64()),
        pa.field("tombstones_removed", pa.int64()),
        pa.field("tombstones_kept", pa.int64()),
        pa.field("oldest_kept_ms", pa.int64()),
    ]
)
"""One row per file written (``path`` set) and one summary row per partition (``path`` null)."""


@dataclass(frozen=True)
class LakeAccess:
    """How a task reaches the table (a LakeStorage is rebuilt from it on the executor)."""

    table_uri: str
    options: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, storage: LakeStorage) -> LakeAccess:
        return cls(storage.uri, tuple(sorted(storage.options.items())))

    def storage(self) -> LakeStorage:
        return LakeStorage(self.table_uri, dict(self.options))


@dataclass(frozen=True)
class KeyScan:
    """What the key-scan tasks read: the snapshot's files (location, partition) by index."""

    lake: LakeAccess
    files: tuple[tuple[str, int], ...]
    boundary_offset: int | None


@dataclass(frozen=True)
class PartitionRewrite:
    """What the rewrite tasks need: each partition's files in offset order, the filters, and
    how to name and split the output."""

    lake: LakeAccess
    files: dict[int, tuple[str, ...]]
    boundary_offset: int | None
    tombstone_cutoff_ms: int
    run_id: int
    max_records_per_file: int
    keys: LakeKeySource | None = None
    """An encrypted stream's: each task fetches its partition's data key, reads the files
    with it and writes the compacted ones encrypted again (None: a clear stream)."""
    file_schema: pa.Schema = FILE_SCHEMA
    """The table's file columns: a typed table's own, kept by the rewrite (older files lacking
    columns a later schema added get them, null)."""


def scan_keys(scan: KeyScan, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: the ids of ``spark.range`` are indexes into ``scan.files``."""
    storage = scan.lake.storage()
    for ids in batches:
        for index in ids.column(0).to_pylist():
            location, partition = scan.files[index]
            yield from _file_keys(storage, location, partition, scan.boundary_offset)


def _file_keys(
    storage: LakeStorage, location: str, partition: int, boundary: int | None
) -> Iterator[pa.RecordBatch]:
    fs, path = storage.filesystem_for(location)
    with fs.open_input_file(path) as source:
        for batch in pq.ParquetFile(source).iter_batches(
            batch_size=SCAN_BATCH_ROWS, columns=["offset", "key"]
        ):
            offsets = batch.column("offset")
            keep = pc.is_valid(batch.column("key"))
            if boundary is not None:
                keep = pc.and_(keep, pc.less(offsets, boundary))
            picked = batch.filter(keep)
            if picked.num_rows:
                yield pa.RecordBatch.from_arrays(
                    [
                        pa.array(np.full(picked.num_rows, partition, np.int32)),
                        picked.column("key").cast(pa.binary()),
                        picked.column("offset").cast(pa.int64()),
                    ],
                    schema=KEY_SCHEMA,
                )


@dataclass
class _Tally:
    rows_in: int = 0
    rows_out: int = 0
    removed: int = 0
    kept: int = 0
    oldest_kept_us: int | None = None


def rewrite_partition(
    spec: PartitionRewrite, key: tuple[pa.Scalar, ...], winners: pa.Table
) -> pa.Table:
    """``applyInArrow`` body for one lake partition: write its surviving rows, describe them."""
    partition = int(key[0].as_py())
    won = np.sort(winners.column("offset").to_numpy())
    won = won[won != NO_WINNER]
    storage = spec.lake.storage()
    token = new_task_token()
    crypto = None if spec.keys is None else spec.keys.file_crypto(partition)
    writer = PartitionFileWriter(
        storage,
        partition,
        lambda n: compacted_name(spec.run_id, token, n),
        spec.max_records_per_file,
        crypto,
        spec.file_schema,
    )
    tally = _Tally()
    try:
        for location in spec.files.get(partition, ()):
            for batch in _file_rows(storage, location, crypto):
                writer.write(_survivors(batch, won, spec, tally))
        files = writer.close()
    except BaseException:
        discard_paths(storage, writer.relative_paths_started())
        raise
    if tally.rows_out >= tally.rows_in:  # nothing dropped: the partition keeps its files
        discard_paths(storage, [f.path for f in files])
        files = []
    return _described(partition, files, tally)


def _file_rows(
    storage: LakeStorage, location: str, crypto: PartitionFileCrypto | None
) -> Iterator[pa.RecordBatch]:
    fs, path = storage.filesystem_for(location)
    with fs.open_input_file(path) as source:
        yield from open_parquet(source, crypto).iter_batches(batch_size=REWRITE_BATCH_ROWS)


def _survivors(
    batch: pa.RecordBatch, winners: np.ndarray, spec: PartitionRewrite, tally: _Tally
) -> pa.RecordBatch:
    """The rows of ``batch`` that stay, counting tombstones removed and kept on the way."""
    offsets = batch.column("offset").to_numpy(zero_copy_only=False)
    keyed = pc.is_valid(batch.column("key")).to_numpy(zero_copy_only=False)
    compacted = keyed if spec.boundary_offset is None else keyed & (offsets < spec.boundary_offset)
    won = _is_in_sorted(offsets, winners)
    tombstone = tombstones(batch)  # a typed table's rows too (its raw value may be absent)
    times_us = batch.column("timestamp").cast(pa.int64()).to_numpy(zero_copy_only=False)
    expired = tombstone & (times_us < spec.tombstone_cutoff_ms * MICROS_PER_MILLI)
    latest = compacted & won
    kept_tombstones = latest & tombstone & ~expired
    tally.rows_in += batch.num_rows
    tally.removed += int(np.count_nonzero(latest & expired))
    tally.kept += int(np.count_nonzero(kept_tombstones))
    if kept_tombstones.any():
        oldest = int(times_us[kept_tombstones].min())
        previous = tally.oldest_kept_us
        tally.oldest_kept_us = oldest if previous is None else min(previous, oldest)
    keep = ~compacted | (won & ~expired)
    survivors = batch.filter(pa.array(keep))
    tally.rows_out += survivors.num_rows
    return survivors


def _is_in_sorted(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """Membership by binary search: one sorted array serves every batch (``pc.is_in`` would
    build a hash set of all winners again for each batch)."""
    if sorted_set.size == 0:
        return np.zeros(values.shape, dtype=bool)
    positions = np.minimum(np.searchsorted(sorted_set, values), sorted_set.size - 1)
    return np.asarray(sorted_set[positions] == values, dtype=bool)


def _described(partition: int, files: list[NewFile], tally: _Tally) -> pa.Table:
    rows = [
        {
            PARTITION_COLUMN: partition,
            "path": f.path,
            "size_bytes": f.size_bytes,
            "modification_time_ms": f.modification_time_ms,
            "stats_json": f.stats_json,
        }
        for f in files
    ]
    oldest_ms = None if tally.oldest_kept_us is None else tally.oldest_kept_us // MICROS_PER_MILLI
    rows.append(
        {
            PARTITION_COLUMN: partition,
            "rows_in": tally.rows_in,
            "rows_out": tally.rows_out,
            "tombstones_removed": tally.removed,
            "tombstones_kept": tally.kept,
            "oldest_kept_ms": oldest_ms,
        }
    )
    return pa.Table.from_pylist(rows, schema=REWRITE_SCHEMA)
