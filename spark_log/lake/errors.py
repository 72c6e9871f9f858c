"""Typed errors of the lake, refining :class:`spark_log.errors.LakeError` (same code, so the
REST mapping needs no new entry, while the exporter can still tell a lost race apart)."""

from __future__ import annotations

from spark_log.errors import LakeError


class LakeCommitConflictError(LakeError):
    """Another writer moved this partition's app transaction first (a concurrent commit of
    the same app id, or the table's version is not the one this export started from): the
    exporter re-reads the table's version and continues from there."""
