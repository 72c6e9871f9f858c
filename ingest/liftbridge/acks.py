"""Liftbridge's acks and publish errors in Liftlog's terms, both ways.

A publish answered here carries a full ``Ack`` (Unix nanosecond timestamps), and a refusal
becomes what the RPC answers it with: a gRPC status on Publish (ingest/liftbridge/status.py),
an ``asyncError`` with its ``PublishAsyncError`` code on PublishAsync. An enveloped ack a
leader sent back with an ``ackError`` is turned into the typed error it stands for.
"""

from __future__ import annotations

from ingest.liftbridge.status import GRPC_CODE_BY_ERROR, status_details
from ingest.produce.envelope_intake import POLICY_BY_ACK_POLICY
from spark_log.errors import (
    ExpectedOffsetMismatchError,
    InvalidRequestError,
    KeyUnavailableError,
    LiftlogError,
    RecordTooLargeError,
)
from spark_log.liftbridge import api_pb2 as pb

ASYNC_CODE_BY_ERROR: dict[str, pb.PublishAsyncError.Code.ValueType] = {
    "invalid_request": pb.PublishAsyncError.BAD_REQUEST,
    "internal_stream": pb.PublishAsyncError.BAD_REQUEST,
    "record_too_large": pb.PublishAsyncError.BAD_REQUEST,
    "request_too_large": pb.PublishAsyncError.BAD_REQUEST,
    "invalid_timestamp": pb.PublishAsyncError.BAD_REQUEST,
    "stream_not_found": pb.PublishAsyncError.NOT_FOUND,
    "partition_not_found": pb.PublishAsyncError.NOT_FOUND,
    "stream_readonly": pb.PublishAsyncError.READONLY,
    "expected_offset_mismatch": pb.PublishAsyncError.INCORRECT_OFFSET,
    "key_unavailable": pb.PublishAsyncError.ENCRYPTION_FAILED,
    "forbidden": pb.PublishAsyncError.PERMISSION_DENIED,
    "unauthenticated": pb.PublishAsyncError.PERMISSION_DENIED,
    "unknown_ack_error": pb.PublishAsyncError.UNKNOWN,
}
"""Codes with a Liftbridge counterpart; any other error Liftlog knows is INTERNAL (a server
side failure: not enough replicas, a paused stream, storage), an unknown one UNKNOWN."""

_ACK_ERRORS: dict[int, LiftlogError] = {
    pb.Ack.INCORRECT_OFFSET: ExpectedOffsetMismatchError("incorrect expected offset"),
    pb.Ack.TOO_LARGE: RecordTooLargeError("message exceeds the stream's max_record_bytes"),
    pb.Ack.ENCRYPTION: KeyUnavailableError("encryption failed on the partition's leader"),
}


class UnknownAckError(LiftlogError):
    """An ack whose ``ackError`` says the leader refused the publish for no given reason."""

    code = "unknown_ack_error"


def ack_policy_name(value: pb.AckPolicy.ValueType) -> str:
    """Liftbridge's ``AckPolicy`` as a Liftlog ack policy (none, leader, all)."""
    name = POLICY_BY_ACK_POLICY.get(value)
    if name is None:
        raise InvalidRequestError(f"ackPolicy {value} is none of LEADER (0), ALL (1), NONE (2)")
    return name


def async_error(exc: LiftlogError) -> pb.PublishAsyncError:
    """The ``asyncError`` a refused PublishAsync request is answered with."""
    code = ASYNC_CODE_BY_ERROR.get(exc.code)
    if code is None:
        known = exc.code in GRPC_CODE_BY_ERROR or exc.code == LiftlogError.code
        code = pb.PublishAsyncError.INTERNAL if known else pb.PublishAsyncError.UNKNOWN
    return pb.PublishAsyncError(code=code, message=status_details(exc))


def async_refusal(correlation_id: str, exc: LiftlogError) -> pb.PublishResponse:
    """A refusal on the PublishAsync stream. Like Liftbridge it carries an empty ``ack``
    too, for clients older than ``asyncError`` that read every response's ack."""
    return pb.PublishResponse(
        correlationId=correlation_id, ack=pb.Ack(), asyncError=async_error(exc)
    )


def ack_refusal(ack: pb.Ack) -> LiftlogError | None:
    """The typed error an ack's ``ackError`` stands for (None: the ack is a success)."""
    if ack.ackError == pb.Ack.OK:
        return None
    known = _ACK_ERRORS.get(ack.ackError)
    if known is not None:
        return type(known)(known.message)
    return UnknownAckError(f"the partition's leader refused the publish (ackError {ack.ackError})")
