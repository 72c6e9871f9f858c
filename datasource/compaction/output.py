"""Names of the files a compaction writes, directly into ``partition=<p>/`` of the table.

There is no staging directory to rename from: a rename on an object store is a copy. A task
writes its partition's files under their final names (the run id, a token of the task
attempt, a sequence number), and only the commit makes them part of the table. Files of a
partition that did not shrink, and of an attempt that lost the commit race, are deleted
again; files a crashed run leaves behind are referenced by no version, so a full vacuum
removes them once older than its retention.
"""

from __future__ import annotations

import uuid

COMPACTED_PREFIX = "compacted-"
TOKEN_HEX_CHARS = 12


def new_task_token() -> str:
    """Distinguishes the files of two attempts of one task (Spark retries a failed task)."""
    return uuid.uuid4().hex[:TOKEN_HEX_CHARS]


def compacted_name(run_id: int, token: str, sequence: int) -> str:
    """``compacted-<run>-<token>-<n>.parquet``: which run wrote it, sorting in write order."""
    return f"{COMPACTED_PREFIX}{run_id}-{token}-{sequence:05d}.parquet"
