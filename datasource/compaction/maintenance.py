"""Small-file maintenance after a compaction run: pack small files (Delta's OPTIMIZE
bin-packing, fenced like a compaction; see ``spark_log.lake.packing``), then vacuum (both
optional).

A failure here does not undo the compaction (it is committed); it is reported, and the CLI
exits non-zero so an operator or scheduler sees it.
"""

from __future__ import annotations

import time

from datasource.compaction.report import MaintenanceResult
from datasource.compaction.settings import (
    SAFE_VACUUM_RETENTION_HOURS,
    CompactionOptions,
    CompactionTarget,
    Progress,
)
from spark_log.errors import LakeError
from spark_log.lake.errors import LakeCommitConflictError
from spark_log.lake.maintenance import vacuum_table
from spark_log.lake.packing import pack_small_files


def run_maintenance(
    target: CompactionTarget, options: CompactionOptions, progress: Progress
) -> MaintenanceResult:
    notes: list[str] = []
    removed = added = vacuumed = 0
    try:
        if options.optimize:
            progress("optimize: packing small files")
            try:
                keys = target.file_keys()
                outcome = pack_small_files(
                    target.storage,
                    target.stream,
                    options.optimize_target_bytes,
                    int(time.time() * 1000),
                    encrypted=target.encrypted,
                    crypto_for=None if keys is None else keys.file_crypto,
                )
                removed, added = outcome.files_removed, outcome.files_added
            except LakeCommitConflictError as exc:
                notes.append(f"packing skipped, a concurrent compaction committed: {exc}")
        if options.vacuum:
            if options.vacuum_retention_hours < SAFE_VACUUM_RETENTION_HOURS:
                notes.append(
                    f"vacuum retention {options.vacuum_retention_hours:g}h is short: a query, "
                    "export or compaction running longer may lose files it still reads"
                )
            progress(f"vacuum: files unreferenced for {options.vacuum_retention_hours:g}h")
            vacuumed = len(vacuum_table(target.storage, options.vacuum_retention_hours))
    except LakeError as exc:
        return MaintenanceResult(removed, added, vacuumed, tuple(notes), error=str(exc))
    return MaintenanceResult(removed, added, vacuumed, tuple(notes))
