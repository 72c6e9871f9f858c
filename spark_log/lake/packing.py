"""Packing a partition's small files into larger ones (Delta's OPTIMIZE bin-packing), committed
with the stream's compaction app transaction (blocking: file and Delta I/O).

Exporters commit one file per partition per round, so a table collects small files and every
reader pays per file. Within a partition, files smaller than the target are taken in offset
order and grouped into runs of at most the target size; each run of two or more becomes one
file with the same rows in the same order. All runs are committed at once, removing exactly
the files packed (``data_change=False``: no record changes).

Why not delta-rs's ``optimize.compact``: it ignores the app transactions it is given, so it
cannot fence a key compaction that read the same files (see ``rewrite``); committed through
``RewriteSnapshot`` with the compaction app id, a pack and a compaction of the same files can
never both commit. Rows are streamed batch by batch, so memory stays at one batch, not one run.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa

from spark_log.crypto.parquet_kms import PartitionFileCrypto
from spark_log.errors import LakeError
from spark_log.lake.compaction_state import (
    COMPACTION_METADATA_KEY,
    compaction_app_id,
    next_run_id,
)
from spark_log.lake.errors import EncryptedLakeKeysError
from spark_log.lake.file_reader import open_parquet
from spark_log.lake.file_writer import PartitionFileWriter
from spark_log.lake.new_file import NewFile, discard_paths
from spark_log.lake.rewrite import RewriteSnapshot, TableFile
from spark_log.lake.storage import LakeStorage
from spark_log.lake.table import FOREIGN_ERRORS

DEFAULT_TARGET_FILE_BYTES = 128 * 1024 * 1024
"""The exporter's ``max_bytes_per_file`` default: packed files are as large as big exports."""
PACKED_PREFIX = "packed-"
UNSPLIT_ROWS = 2**62
"""A packed run becomes one file, whatever its row count (its bytes are bounded instead)."""


@dataclass(frozen=True)
class PackOutcome:
    files_removed: int
    files_added: int
    table_version: int | None
    """The commit's version; None when there was nothing to pack."""


def plan_runs(files: Sequence[TableFile], target_bytes: int) -> list[list[TableFile]]:
    """Runs of consecutive small files (per partition, in offset order) worth packing."""
    runs: list[list[TableFile]] = []
    by_partition: dict[int, list[TableFile]] = {}
    for f in files:
        by_partition.setdefault(f.partition, []).append(f)
    for partition in sorted(by_partition):
        ordered = sorted(by_partition[partition], key=lambda f: (f.min_offset or 0, f.path))
        run: list[TableFile] = []
        size = 0
        for f in ordered:
            if f.size_bytes >= target_bytes or size + f.size_bytes > target_bytes:
                runs.append(run)
                run, size = [], 0
            if f.size_bytes < target_bytes:
                run.append(f)
                size += f.size_bytes
        runs.append(run)
    return [r for r in runs if len(r) >= 2]


def pack_small_files(
    storage: LakeStorage,
    stream: str,
    target_bytes: int,
    now_ms: int,
    *,
    encrypted: bool = False,
    crypto_for: Callable[[int], PartitionFileCrypto] | None = None,
) -> PackOutcome:
    """Pack every partition's small files of the table at ``storage``; one commit, fenced by
    the compaction app id. Files are read and written through the lake's pyarrow filesystem.

    ``encrypted``: the stream's files are Parquet modular-encrypted; ``crypto_for(p)`` gives
    partition ``p``'s keys, with which packed files are read and written encrypted again.
    Without it an encrypted stream is refused (EncryptedLakeKeysError)."""
    if encrypted and crypto_for is None:
        raise EncryptedLakeKeysError(
            f"stream {stream} is encrypted: its small files are not packed without its data keys"
        )
    snapshot = RewriteSnapshot.open(storage, stream)
    if snapshot is None:
        return PackOutcome(0, 0, None)
    runs = plan_runs(snapshot.files(), target_bytes)
    if not runs:
        return PackOutcome(0, 0, None)
    file_schema = snapshot.file_schema()  # a typed table's columns stay as they are
    app = compaction_app_id(stream)
    run_id = next_run_id(snapshot.transaction_version(app), now_ms)
    started: list[str] = []
    written: list[NewFile] = []
    try:
        for run in runs:
            crypto = None if crypto_for is None else crypto_for(run[0].partition)
            written.append(_write_run(storage, run, run_id, started, crypto, file_schema))
        version = snapshot.commit_replace(
            [f for run in runs for f in run],
            written,
            {app: run_id},
            {COMPACTION_METADATA_KEY: {"operation": "pack", "stream": stream, "run": run_id}},
            data_change=False,
        )
    except LakeError:
        discard_paths(storage, started)
        raise
    except FOREIGN_ERRORS as exc:
        discard_paths(storage, started)
        raise LakeError(f"cannot pack the small files of {storage.uri}: {exc}") from exc
    return PackOutcome(sum(len(r) for r in runs), len(written), version)


def _write_run(
    storage: LakeStorage,
    run: list[TableFile],
    run_id: int,
    started: list[str],
    crypto: PartitionFileCrypto | None,
    file_schema: pa.Schema,
) -> NewFile:
    """Stream the run's rows, in order, into one new file of the partition (in the table's
    columns now: a typed table's older files lack the ones later schemas added)."""
    name = f"{PACKED_PREFIX}{run_id}-{uuid.uuid4().hex}.parquet"
    writer = PartitionFileWriter(
        storage, run[0].partition, lambda _n: name, UNSPLIT_ROWS, crypto, file_schema
    )
    try:
        writer.write_all(_batches(storage, run, crypto))
        (packed,) = writer.close()
    finally:
        started.extend(writer.relative_paths_started())
    return packed


def _batches(
    storage: LakeStorage, run: list[TableFile], crypto: PartitionFileCrypto | None
) -> Iterator[pa.RecordBatch]:
    for f in run:
        fs, path = storage.filesystem_for(f.location)
        with fs.open_input_file(path) as source:
            yield from open_parquet(source, crypto).iter_batches()
