"""The data source's adapter for ``spark_log.lake.view``: the planner's snapshot of a stream's
Delta table (files per partition with their offset and time statistics, and each partition's
lake offset). The reading itself lives in ``spark_log.lake.view``, shared with the nodes' lake
read tier; here its errors become the data source's LakeReadError."""

from __future__ import annotations

from datasource.errors import LakeReadError
from spark_log.lake.errors import LakeFileReadError
from spark_log.lake.storage import LakeStorage
from spark_log.lake.view import LakeFile, LakeView
from spark_log.lake.view import load_lake_view as _load

__all__ = ["LakeFile", "LakeView", "load_lake_view"]


def load_lake_view(
    uri: str, stream: str, partitions: int, storage: LakeStorage | None = None
) -> LakeView | None:
    """The table's latest version; None when no table exists yet (nothing exported).
    ``storage``: the lake's store options (an ``s3://`` lake's endpoint and credentials)."""
    try:
        return _load(uri, stream, partitions, storage)
    except LakeFileReadError as exc:
        raise LakeReadError(str(exc)) from exc
