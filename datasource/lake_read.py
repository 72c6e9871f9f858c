"""Executor side: the lake rows of one task, read from its Parquet files with pyarrow.

The reading lives in ``spark_log.lake.range_read`` (shared with the nodes' lake read tier);
this adapter adds the source's columns and its time conditions (``RowFilter``) and turns lake
errors into the data source's LakeReadError, worded for a query.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from datasource.errors import LakeReadError
from datasource.row_filter import RowFilter
from datasource.schema import SOURCE_COLUMNS
from spark_log.crypto.parquet_kms import PartitionFileCrypto
from spark_log.lake import range_read
from spark_log.lake.errors import LakeFileGoneError, LakeFileReadError
from spark_log.lake.range_read import DEFAULT_BATCH_ROWS
from spark_log.lake.storage import LakeStorage

__all__ = ["DEFAULT_BATCH_ROWS", "lake_offset_for_timestamp", "read_lake"]


def read_lake(
    paths: tuple[str, ...],
    start: int,
    end: int,
    rows: RowFilter | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    columns: list[str] | None = None,
    storage: LakeStorage | None = None,
    crypto: PartitionFileCrypto | None = None,
) -> Iterator[pa.RecordBatch]:
    """Rows with ``start <= offset < end`` of ``paths`` (``columns``, default SOURCE_COLUMNS),
    opened through ``storage``; ``crypto``: an encrypted stream's partition keys. Row groups
    are chosen by their offset (and, with ``rows``, timestamp) statistics; time and key
    conditions are applied later, on the output rows."""
    try:
        yield from range_read.read_range(
            paths,
            start,
            end,
            times=rows,
            batch_rows=batch_rows,
            columns=columns or SOURCE_COLUMNS,
            storage=storage,
            crypto=crypto,
        )
    except LakeFileGoneError as exc:
        raise LakeReadError(f"{exc}: run the query again") from exc
    except LakeFileReadError as exc:
        raise LakeReadError(str(exc)) from exc


def lake_offset_for_timestamp(
    paths: list[str], timestamp_us: int, below: int, storage: LakeStorage | None = None
) -> int | None:
    """The smallest offset below ``below`` in ``paths`` whose timestamp is >= ``timestamp_us``."""
    try:
        return range_read.offset_for_timestamp(paths, timestamp_us, below, storage)
    except LakeFileReadError as exc:
        raise LakeReadError(str(exc)) from exc
