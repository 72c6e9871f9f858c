"""Typed errors of the Liftlog core.

Every error carries a stable machine-readable ``code`` (snake_case). The REST layer maps codes
to HTTP statuses in one place (``ingest.api.errors``) and NATS acks carry the same code, so a
client sees the same word for the same failure whichever path it used.
"""

from __future__ import annotations


class LiftlogError(Exception):
    """Base of every error raised by Liftlog code."""

    code: str = "internal_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_json(self) -> dict[str, dict[str, str]]:
        """The wire shape shared by REST errors and NATS error acks."""
        return {"error": {"code": self.code, "message": self.message}}


class ConfigError(LiftlogError):
    """A configuration file or value is invalid (unknown key, wrong type, out of range)."""

    code = "invalid_config"


class InvalidRequestError(LiftlogError):
    """A request is malformed or has an invalid argument."""

    code = "invalid_request"


class StreamNotFoundError(LiftlogError):
    code = "stream_not_found"


class PartitionNotFoundError(LiftlogError):
    code = "partition_not_found"


class NoReassignmentError(LiftlogError):
    """A cancel named a stream or partition with no pending reassignment (none was submitted,
    or it completed already): there is nothing to revert."""

    code = "no_reassignment"


class StreamExistsError(LiftlogError):
    """A stream with the same name but a different spec already exists."""

    code = "stream_exists"


class RecordTooLargeError(LiftlogError):
    code = "record_too_large"


class ExpectedOffsetMismatchError(LiftlogError):
    """``Liftlog-Expected-Offset`` did not match the offset the record would get."""

    code = "expected_offset_mismatch"


class NotLeaderError(LiftlogError):
    """This node does not lead the partition (or stopped leading it)."""

    code = "not_leader"


class NotEnoughReplicasError(LiftlogError):
    """An ``acks=all`` publish refused before the append: the in-sync replica set was smaller
    than the stream's min ISR, so nothing was stored and publishing again cannot duplicate."""

    code = "not_enough_replicas"


class NotEnoughReplicasAfterAppendError(LiftlogError):
    """An ``acks=all`` publish appended while the ISR was large enough, after which it fell
    below min ISR before the leader could route the ack: the record is in the leader's log
    and is committed if the ISR heals, so only a publish with a msg id may safely be sent
    again. Not a subclass of ``NotEnoughReplicasError``, which promises nothing was stored."""

    code = "not_enough_replicas_after_append"


class StreamPausedError(LiftlogError):
    code = "stream_paused"


class OffsetOutOfRangeError(LiftlogError):
    """A fetch asked for an offset below the log start or above the high watermark."""

    code = "offset_out_of_range"


class CorruptRecordError(LiftlogError):
    """A batch failed its CRC or framing check."""

    code = "corrupt_record"


class StorageError(LiftlogError):
    code = "storage_error"


class UnavailableError(LiftlogError):
    """A dependency (NATS, ZooKeeper, a node) cannot be reached right now; retry later."""

    code = "unavailable"


class NoRespondersError(UnavailableError):
    """Nothing subscribes to the NATS subject a publish went to (nats-server's no-responders
    status): the stream does not record that subject, or its partition has no live leader."""

    code = "no_responders"


class RequestTimeoutError(LiftlogError):
    """A bounded wait (ack, fetch, readiness) ran out."""

    code = "timeout"


class ProcessStartError(LiftlogError):
    """An embedded component (nats-server, ZooKeeper, a node) failed to start."""

    code = "process_start_failed"


class LakeError(LiftlogError):
    """The Delta lake could not be read or committed to (deltalake's errors, converted at the
    adapter); exports retry with backoff, so this is transient unless it persists."""

    code = "lake_error"
