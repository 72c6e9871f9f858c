"""Typed errors of the partition log, refining the core errors in :mod:`spark_log.errors`.

They subclass the core types (and keep their ``code``) so the REST/NATS error mapping needs no
new entries, while callers such as the replica fetcher can still catch the precise case.
"""

from __future__ import annotations

from spark_log.errors import InvalidRequestError, StorageError


class NonContiguousBatchError(InvalidRequestError):
    """A batch's base offset is not the log end offset (offsets must stay dense)."""


class LeaderEpochRegressionError(InvalidRequestError):
    """A batch carries a leader epoch lower than the latest epoch already in the log."""


class CheckpointError(StorageError):
    """A checkpoint file exists but cannot be parsed; callers fall back to a safe default."""


class LogClosedError(StorageError):
    """The log was closed (or deleted); no further reads or writes are possible."""


class FsyncError(StorageError):
    """An fsync of log data failed. Linux may already have dropped the dirty pages and marked
    them clean, so a later fsync that succeeds proves nothing about them: the log refuses
    writes until it is reopened (recovery rescans it), whatever the errno, ENOSPC included.
    Never a full-disk stall that retries by itself (``ingest.replication.storage_stall``)."""
