"""Where a stream's Delta table lives, its schema, and the app-transaction id per partition.

One table per stream incarnation, partitioned by ``partition``. The exporter of partition p
commits with the Delta app transaction ``app_id(stream, p)`` whose version is the partition's
exported end offset (the first offset *not* in the lake): a reader learns ``lake_offset`` from
the table alone, and an exporter checks it before committing, so export is gap-free and
non-overlapping whoever leads.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, TypeAlias

import pyarrow as pa

from spark_log.log.batch import HEADERS_TYPE

if TYPE_CHECKING:
    from spark_log.config import LakeConfig

PARTITION_COLUMN = "partition"
LAKE_SCHEMA = pa.schema(
    [
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("timestamp", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary(), nullable=False),
        pa.field("headers", HEADERS_TYPE),
        pa.field("subject", pa.string(), nullable=False),
    ]
)
APP_ID_PREFIX = "liftlog"

# pyarrow ships no type information: a row of ``Table.to_pylist()`` (an add action's columns)
# and a Parquet statistic's min or max (an int, a datetime or bytes, by the column's type)
ArrowRow: TypeAlias = dict[str, Any]
ParquetStatistic: TypeAlias = Any


def table_uri(lake_uri: str, stream: str, created_at_ms: int) -> str:
    """``<lake>/<stream>@<incarnation>``: a re-created stream never mixes with an old table.

    The suffix is the stream's creation time in ms, as in the local log directories."""
    return f"{lake_uri.rstrip('/')}/{stream}@{created_at_ms}"


def configured_table_uri(lake: LakeConfig, stream: str, created_at_ms: int) -> str | None:
    """The stream's table in a node's configured lake, or None when its lake is disabled."""
    return table_uri(lake.uri, stream, created_at_ms) if lake.enabled else None


def app_id(stream: str, partition: int) -> str:
    """The Delta app-transaction id of one stream partition's exporter."""
    return f"{APP_ID_PREFIX}:{stream}:{partition}"


FILE_SCHEMA = pa.schema([f for f in LAKE_SCHEMA if f.name != PARTITION_COLUMN])
"""What a lake file holds: the partition is only in its directory name."""
MICROS_PER_MILLI = 1000


def file_location(uri: str, relative: str) -> str:
    """Where a file of the table is, for pyarrow: absolute paths and URIs stay, the rest joins
    the table root (built here because ``DeltaTable.file_uris`` percent-encodes local paths)."""
    if "://" in relative or relative.startswith("/"):
        return relative
    if "://" in uri:
        return f"{uri.rstrip('/')}/{relative}"
    return os.path.join(uri, relative)


def to_micros(value: object) -> int | None:
    """A timestamp statistic (datetime or integer µs) as µs since the epoch; None stays None."""
    if value is None:
        return None
    return int(pa.scalar(value, pa.timestamp("us", tz="UTC")).value)
