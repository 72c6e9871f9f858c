"""Errors of the ingest node process."""

from __future__ import annotations

from spark_log.errors import LiftlogError


class IngestError(LiftlogError):
    code = "ingest_error"


class ReplicaStoppedError(IngestError):
    """The replica stopped (stream deleted, node shutting down) before the request finished."""

    code = "unavailable"
