"""Vacuum of a stream's Delta table through delta-rs (errors become typed LakeErrors here;
blocking). It follows a key compaction and the packing of small files (``packing``), which
leave removed files behind.

Vacuum never touches a file the latest version references; what it deletes are files removed
longer ago than the retention (and, in full mode, files never committed, such as the leftovers
of a crashed compaction, once older than the retention). A reader still planning on an older
version, or a compaction or export still writing, must finish within the retention: that is
why the default is Delta's own 7 days and shorter values are an explicit choice.
"""

from __future__ import annotations

from deltalake import DeltaTable

from spark_log.errors import LakeError
from spark_log.lake.storage import LakeStorage
from spark_log.lake.table import FOREIGN_ERRORS

DELTA_DEFAULT_RETENTION_HOURS = 168.0
"""Delta's default ``delta.deletedFileRetentionDuration`` (7 days); below it, delta-rs wants
an explicit override."""


def vacuum_table(storage: LakeStorage, retention_hours: float, *, full: bool = True) -> list[str]:
    """Delete files unreferenced for longer than ``retention_hours`` from the table at
    ``storage``; return their paths."""
    uri = storage.uri
    try:
        return DeltaTable(uri, storage_options=storage.delta_options()).vacuum(
            retention_hours=_whole_hours(retention_hours),
            dry_run=False,
            enforce_retention_duration=retention_hours >= DELTA_DEFAULT_RETENTION_HOURS,
            full=full,
        )
    except FOREIGN_ERRORS as exc:
        raise LakeError(f"cannot vacuum {uri}: {exc}") from exc


def _whole_hours(hours: float) -> int:
    """delta-rs takes whole hours; round up, so the retention is never shorter than asked."""
    whole = int(hours)
    return whole if whole == hours else whole + 1
