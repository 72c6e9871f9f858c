"""Key compaction of a stream's lake table as a Spark job (Kafka's log compaction).

Per partition, below a boundary (default: the partition's lake offset), only the latest record
of each key stays; records without a key always stay; a tombstone (a key with an empty value)
removes its key once older than the stream's ``delete_retention_ms``. Original offsets are
kept. Spark decides what survives and runs the tasks; the tasks read and write the lake
files through pyarrow (so ``s3://``, ``gs://``, ``abfss://`` and local lakes work alike,
without Hadoop connectors), and the driver commits in one Delta transaction that removes
exactly the files read. See docs/compaction.md.
"""

from __future__ import annotations

from datasource.compaction.errors import (
    CompactionConflictError,
    CompactionDisabledError,
    CompactionError,
    UnsupportedLakeError,
)
from datasource.compaction.report import CompactionReport, PartitionResult
from datasource.compaction.runner import compact_stream
from datasource.compaction.schedule import CompactionSchedule
from datasource.compaction.settings import CompactionOptions, CompactionTarget

__all__ = [
    "CompactionConflictError",
    "CompactionDisabledError",
    "CompactionError",
    "CompactionOptions",
    "CompactionReport",
    "CompactionSchedule",
    "CompactionTarget",
    "PartitionResult",
    "UnsupportedLakeError",
    "compact_stream",
]
