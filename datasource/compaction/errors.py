"""Typed errors of key compaction.

They refine :class:`spark_log.errors.LiftlogError`, so ``liftlog compact`` prints the same
``code: message`` shape as every other command.
"""

from __future__ import annotations

from spark_log.errors import LiftlogError


class CompactionError(LiftlogError):
    """Base of every error the compaction job raises itself."""

    code = "compaction_failed"


class CompactionDisabledError(CompactionError):
    """The stream was not created with ``compaction: true`` (and ``--force`` was not given)."""

    code = "compaction_disabled"


class CompactionConflictError(CompactionError):
    """Another compaction (or an optimize) committed first, and the retries ran out."""

    code = "compaction_conflict"


class UnsupportedLakeError(CompactionError):
    """The lake cannot be compacted from here: the cluster's lake is disabled, or its URI names
    a store pyarrow has no filesystem for (the job's tasks read and write through pyarrow)."""

    code = "unsupported_lake"


class InvalidCompactionOptionError(CompactionError):
    code = "invalid_option"
