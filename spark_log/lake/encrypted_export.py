"""Exporting a range of an encrypted stream: the rows (values decrypted from the segments)
are written with Parquet modular encryption by pyarrow, then committed as Delta ``add``
actions with the partition's app transaction (blocking: file and Delta I/O).

delta-rs's writer cannot write modular-encrypted Parquet, so the exporter of an encrypted
stream writes its file itself, in the lake's file format (``file_writer``) with the ``value``
column encrypted under the partition's data key and the footer plaintext, and commits it
through ``LakeSnapshot.append_files``: the same compare-and-set on the app transaction as a
clear stream's ``append``, so exactly-once export does not depend on how the file was written.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from spark_log.crypto.parquet_kms import PartitionFileCrypto
from spark_log.errors import NotLeaderError
from spark_log.json_types import JsonMapping
from spark_log.lake.errors import LakeCommitConflictError
from spark_log.lake.extract import LakeRange
from spark_log.lake.file_writer import PartitionFileWriter
from spark_log.lake.new_file import NewFile, discard_paths
from spark_log.lake.storage import LakeStorage
from spark_log.lake.table import LakeSnapshot

WHOLE_RANGE_ROWS = 2**62
"""One export is one file: the range is already capped by ``lake.max_records_per_file``."""


@dataclass(frozen=True)
class ExportCommit:
    """What the commit of one export carries besides its files (see ``LakeSnapshot.append``)."""

    partition: int
    still_allowed: Callable[[], bool]
    metadata: JsonMapping


def export_file_name() -> str:
    """A data file name in delta-rs's style, unique per export attempt."""
    return f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"


def export_encrypted(
    snapshot: LakeSnapshot,
    storage: LakeStorage,
    chunk: LakeRange,
    crypto: PartitionFileCrypto,
    commit: ExportCommit,
) -> int:
    """Write ``chunk`` as one encrypted file of the partition and commit it against
    ``snapshot``, moving the partition's txn version to the chunk's end; the table version.

    A commit that surely did not land (a lost race, a deposed leader) deletes its file; one
    whose outcome is unknown leaves it (a full vacuum removes it if it was never committed)."""
    name = export_file_name()
    writer = PartitionFileWriter(
        storage, commit.partition, lambda _n: name, WHOLE_RANGE_ROWS, crypto
    )
    try:
        writer.write_table(chunk.table)
        files = writer.close()
    except BaseException:
        discard_paths(storage, writer.relative_paths_started())
        raise
    return _commit(snapshot, storage, chunk, files, commit)


def _commit(
    snapshot: LakeSnapshot,
    storage: LakeStorage,
    chunk: LakeRange,
    files: list[NewFile],
    commit: ExportCommit,
) -> int:
    try:
        return snapshot.append_files(
            files, commit.partition, chunk.end_offset, commit.still_allowed, commit.metadata
        )
    except (LakeCommitConflictError, NotLeaderError):
        discard_paths(storage, [f.path for f in files])
        raise
