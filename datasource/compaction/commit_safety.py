"""The commit-safety check of a compaction: the same put-if-absent probe exporters run.

A compaction's commit is a Delta commit like an export's: on an S3 store that ignores
``If-None-Match`` a compaction and an export (or two compactions) could both "commit" one
version and one of them would silently replace the other. So before the job starts (no Spark
work is wasted on a store that would be refused) the lake's store is checked once with
``spark_log.lake.commit_safety``, with the options this job commits with; an unsafe store is
refused with the same typed error a node gives (UnsafeLakeStoreError, ``unsafe_lake_store``).

The probe runs at the lake's root (the table's parent), under ``_liftlog/commit-probe/``
where the exporters probe too, never inside the stream's table directory.
"""

from __future__ import annotations

from spark_log.lake.commit_safety import check_commit_safety
from spark_log.lake.storage import LakeStorage

COMPACTION_ACTION = "commit a compaction to"
"""How a refusal names what it refused (``refusing to commit a compaction to s3://...``)."""


def lake_root(storage: LakeStorage) -> LakeStorage:
    """The lake holding the table (``<lake>/<stream>@<incarnation>``), same store options."""
    uri = storage.uri.rstrip("/")
    parent = uri.rpartition("/")[0]
    if not parent or parent.endswith(":/"):  # no parent, or the table is a bucket itself
        return storage.at(uri)
    return storage.at(parent)


def require_commit_safety(storage: LakeStorage) -> None:
    """Return if the table's store makes Delta commits atomic (always, off S3);
    UnsafeLakeStoreError when it cannot, LakeError when the store cannot be checked now."""
    check_commit_safety(lake_root(storage), COMPACTION_ACTION)
