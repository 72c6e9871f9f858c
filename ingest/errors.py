"""Errors of the ingest node process."""

from __future__ import annotations

from spark_log.errors import LiftlogError


class IngestError(LiftlogError):
    code = "ingest_error"


class ReplicaStoppedError(IngestError):
    """The replica stopped (stream deleted, node shutting down) before the request finished."""

    code = "unavailable"


class StopPositionReachedError(IngestError):
    """A Liftbridge subscription reached its stop position (or the end of a read-only
    partition). Liftbridge ends the stream with RESOURCE_EXHAUSTED there, and its clients read
    that status as the end of the subscription, not as a failure to retry."""

    code = "stop_position_reached"
