"""Files written into a table's directory that a commit has not taken yet: how a writer
describes one for its add action, and how it deletes those a commit surely did not take."""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import pyarrow.parquet as pq

from spark_log.errors import LakeError
from spark_log.lake.file_stats import parquet_stats_json
from spark_log.lake.storage import LakeStorage


@dataclass(frozen=True)
class NewFile:
    """A file already written into the table directory, to be added by a commit."""

    path: str
    partition: int
    size_bytes: int
    modification_time_ms: int
    stats_json: str


def written_file(
    relative: str,
    partition: int,
    size_bytes: int,
    footer: pq.FileMetaData,
    encrypted: Collection[str] = (),
) -> NewFile:
    """A file just written into the table's directory, described for the commit: its size,
    the write time, and the Parquet statistics from its footer (which readers prune by), all
    known to the writer, so the store is not asked again. ``encrypted``: the columns under
    Parquet modular encryption (no statistics for them)."""
    return NewFile(
        path=relative,
        partition=partition,
        size_bytes=size_bytes,
        modification_time_ms=int(time.time() * 1000),
        stats_json=parquet_stats_json(footer, encrypted),
    )


def discard(storage: LakeStorage, files: Sequence[NewFile]) -> None:
    """Delete written files a commit did not take (only when it surely did not)."""
    discard_paths(storage, [f.path for f in files])


def discard_paths(storage: LakeStorage, relative_paths: Sequence[str]) -> None:
    """Delete files of the table by their paths relative to its root (absent ones are fine)."""
    if not relative_paths:
        return
    fs, root = storage.filesystem()
    for relative in relative_paths:
        try:
            fs.delete_file(f"{root.rstrip('/')}/{relative}")
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise LakeError(f"cannot delete {relative} of {storage.uri}: {exc}") from exc
