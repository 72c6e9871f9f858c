"""The lake: each stream's committed history as a Delta table (layout shared by the exporter,
the ``liftlog`` data source and the compaction job)."""

from spark_log.lake.errors import LakeCommitConflictError
from spark_log.lake.extract import LakeRange, read_range
from spark_log.lake.layout import (
    LAKE_SCHEMA,
    PARTITION_COLUMN,
    app_id,
    configured_table_uri,
    table_uri,
)
from spark_log.lake.table import LakeSnapshot, LakeTable

__all__ = [
    "LAKE_SCHEMA",
    "PARTITION_COLUMN",
    "LakeCommitConflictError",
    "LakeRange",
    "LakeSnapshot",
    "LakeTable",
    "app_id",
    "configured_table_uri",
    "read_range",
    "table_uri",
]
