"""Where compacted files are written before the commit, and how they enter the table's layout.

Spark writes into a staging directory under the table root (``compaction-staging-<run>-<id>``,
no leading ``_`` or ``.``, so a full vacuum removes it if a crash leaves it behind). Only after
the result is known does a changed partition's file move into ``partition=<p>/`` under a name
that says which run wrote it; a rename within one file system, so no byte is copied twice.
Files of partitions that did not change are dropped with the staging directory.

Spark writes through Hadoop's file system, the commit goes through delta-rs: both must reach
the same directory, which for now means a local (or locally mounted) lake.
"""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow.parquet as pq

from datasource.compaction.errors import UnsupportedLakeError
from spark_log.lake.layout import PARTITION_COLUMN
from spark_log.lake.rewrite import NewFile, new_file

STAGING_PREFIX = "compaction-staging-"
COMPACTED_PREFIX = "compacted-"


@dataclass(frozen=True)
class StagedFile:
    path: Path
    partition: int
    records: int


def local_table_root(uri: str) -> Path:
    """The table's directory on this machine (plain paths and ``file://`` URIs)."""
    if "://" not in uri:
        return Path(uri)
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    raise UnsupportedLakeError(
        f"the lake table {uri} is on {parsed.scheme}://; compaction writes through the local "
        "file system for now (mount the store, or compact where the lake is a local path)"
    )


def new_staging_dir(root: Path, run_id: int) -> Path:
    return root / f"{STAGING_PREFIX}{run_id}-{uuid.uuid4().hex[:8]}"


def staged_files(staging: Path) -> dict[int, list[StagedFile]]:
    """The Parquet files Spark wrote, per partition, in write order, with their row counts."""
    found: dict[int, list[StagedFile]] = {}
    if not staging.is_dir():
        return found
    for directory in sorted(staging.glob(f"{PARTITION_COLUMN}=*")):
        partition = int(directory.name.split("=", 1)[1])
        for path in sorted(directory.glob("*.parquet")):
            if path.name.startswith((".", "_")):
                continue
            rows = pq.ParquetFile(path).metadata.num_rows
            found.setdefault(partition, []).append(StagedFile(path, partition, rows))
    return found


def place(staged: list[StagedFile], root: Path, run_id: int) -> list[NewFile]:
    """Move staged files into ``partition=<p>/`` and describe them for the commit."""
    placed: list[NewFile] = []
    for item in staged:
        relative = (
            f"{PARTITION_COLUMN}={item.partition}/{COMPACTED_PREFIX}{run_id}-{item.path.name}"
        )
        destination = root / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        os.replace(item.path, destination)
        placed.append(new_file(destination, relative, item.partition))
    return placed


def remove_staging(staging: Path) -> None:
    shutil.rmtree(staging, ignore_errors=True)
