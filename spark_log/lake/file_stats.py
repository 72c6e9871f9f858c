"""Delta ``add`` statistics for a Parquet file written outside delta-rs (by the compaction
job's tasks and by small-file packing, through pyarrow).

Readers prune files by these statistics: the ``liftlog`` data source picks the files that
hold an offset range by ``minValues.offset``/``maxValues.offset``, and Delta readers skip
files by time. A file added without them is read by every query, so a compaction or a pack
must give its files the same statistics delta-rs gives its own. They come
from the Parquet footer the writer just produced, so the file is not read again.

An encrypted stream's ``value`` column is left out: its column metadata is encrypted, and
pyarrow aborts the process (it does not raise) when such metadata is touched without the key.

Timestamps are written in the Delta convention, ISO-8601 at millisecond precision; the
minimum is rounded down and the maximum up, so both stay true bounds.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Collection

import pyarrow.parquet as pq

from spark_log.lake.layout import MICROS_PER_MILLI, ParquetStatistic

STATS_COLUMNS = ("offset", "timestamp")
"""Columns with min/max statistics (what readers prune on)."""
NULL_COUNT_COLUMNS = ("offset", "timestamp", "key", "value", "subject")


def parquet_stats_json(metadata: pq.FileMetaData, encrypted: Collection[str] = ()) -> str:
    """The ``stats`` JSON of an add action for a file with this footer; the ``encrypted``
    columns get no statistics (the module docstring says why)."""
    columns = {
        name: index for name, index in _top_level_columns(metadata).items() if name not in encrypted
    }
    mins: dict[str, int | str] = {}
    maxs: dict[str, int | str] = {}
    nulls: dict[str, int] = {}
    for name in NULL_COUNT_COLUMNS:
        count = _null_count(metadata, columns.get(name))
        if count is not None:
            nulls[name] = count
    for name in STATS_COLUMNS:
        bounds = _min_max(metadata, columns.get(name))
        if bounds is None:
            continue
        lo, hi = bounds
        if name == "timestamp":
            mins[name], maxs[name] = _iso_millis(lo, up=False), _iso_millis(hi, up=True)
        else:
            mins[name], maxs[name] = int(lo), int(hi)
    return json.dumps(
        {
            "numRecords": metadata.num_rows,
            "minValues": mins,
            "maxValues": maxs,
            "nullCount": nulls,
        },
        separators=(",", ":"),
    )


def _top_level_columns(metadata: pq.FileMetaData) -> dict[str, int]:
    """Leaf column index of each top-level primitive column (nested ones are left out)."""
    schema = metadata.schema
    return {
        schema.column(i).path: i for i in range(len(schema)) if "." not in schema.column(i).path
    }


def _null_count(metadata: pq.FileMetaData, column: int | None) -> int | None:
    if column is None:
        return None
    total = 0
    for rg in range(metadata.num_row_groups):
        stats = metadata.row_group(rg).column(column).statistics
        if stats is None or not stats.has_null_count:
            return None
        total += stats.null_count
    return total


def _min_max(
    metadata: pq.FileMetaData, column: int | None
) -> tuple[ParquetStatistic, ParquetStatistic] | None:
    """The file-wide bounds of a column; None when any row group lacks them (or no rows)."""
    if column is None or metadata.num_rows == 0:
        return None
    lows, highs = [], []
    for rg in range(metadata.num_row_groups):
        group = metadata.row_group(rg)
        if group.num_rows == 0:
            continue
        stats = group.column(column).statistics
        if stats is None or not stats.has_min_max:
            return None
        lows.append(stats.min)
        highs.append(stats.max)
    return (min(lows), max(highs)) if lows else None


def _iso_millis(value: int | dt.datetime, *, up: bool) -> str:
    """A Parquet timestamp statistic (datetime or int micros) as Delta's stats string."""
    micros = value if isinstance(value, int) else _to_micros(value)
    millis, rest = divmod(micros, MICROS_PER_MILLI)
    if up and rest:
        millis += 1
    seconds, millis_part = divmod(millis, 1000)
    when = dt.datetime.fromtimestamp(seconds, dt.UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis_part:03d}Z"


def _to_micros(value: dt.datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    delta = value - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
