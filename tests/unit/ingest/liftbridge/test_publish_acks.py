"""Acks and publish errors between Liftbridge's wire and Liftlog's typed errors."""

from __future__ import annotations

import json

import pytest

from ingest.liftbridge.ack_inbox import read_ack
from ingest.liftbridge.acks import (
    ack_policy_name,
    ack_refusal,
    async_error,
    async_refusal,
)
from ingest.liftbridge.status import grpc_code
from ingest.produce.envelope_acks import EnvelopeAck
from spark_log.errors import (
    ExpectedOffsetMismatchError,
    ForbiddenError,
    InvalidRequestError,
    KeyUnavailableError,
    LiftlogError,
    NotEnoughReplicasError,
    RecordTooLargeError,
    StreamNotFoundError,
    StreamReadOnlyError,
)
from spark_log.liftbridge import api_pb2 as pb
from spark_log.liftbridge.envelope import encode_ack
from spark_log.wire import encode_error

FIELDS = EnvelopeAck(
    stream="s",
    partition_subject="s.in",
    msg_subject="s.in",
    ack_inbox="_INBOX.client.1",
    correlation_id="c-1",
    ack_policy=pb.ALL,
    reception_ns=1_000,
)


def test_ack_policies_map_to_liftlogs() -> None:
    assert [ack_policy_name(p) for p in (pb.LEADER, pb.ALL, pb.NONE)] == ["leader", "all", "none"]


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (StreamNotFoundError("x"), pb.PublishAsyncError.NOT_FOUND),
        (InvalidRequestError("x"), pb.PublishAsyncError.BAD_REQUEST),
        (RecordTooLargeError("x"), pb.PublishAsyncError.BAD_REQUEST),
        (StreamReadOnlyError("x"), pb.PublishAsyncError.READONLY),
        (ExpectedOffsetMismatchError("x"), pb.PublishAsyncError.INCORRECT_OFFSET),
        (KeyUnavailableError("x"), pb.PublishAsyncError.ENCRYPTION_FAILED),
        (ForbiddenError("x"), pb.PublishAsyncError.PERMISSION_DENIED),
        (NotEnoughReplicasError("x"), pb.PublishAsyncError.INTERNAL),
    ],
)
def test_refusals_carry_liftbridges_async_error_codes(
    error: LiftlogError, code: pb.PublishAsyncError.Code.ValueType
) -> None:
    refusal = async_error(error)
    assert refusal.code == code
    assert error.code in refusal.message


def test_an_async_refusal_echoes_the_correlation_id_and_carries_an_empty_ack() -> None:
    response = async_refusal("c-9", StreamNotFoundError("no such stream"))
    assert response.correlationId == "c-9"
    assert response.HasField("ack") and response.ack.correlationId == ""
    assert response.asyncError.code == pb.PublishAsyncError.NOT_FOUND


@pytest.mark.parametrize(
    ("ack_error", "refusal", "status"),
    [
        (pb.Ack.INCORRECT_OFFSET, ExpectedOffsetMismatchError, "FAILED_PRECONDITION"),
        (pb.Ack.TOO_LARGE, RecordTooLargeError, "INVALID_ARGUMENT"),
        (pb.Ack.ENCRYPTION, KeyUnavailableError, "UNAVAILABLE"),
    ],
)
def test_an_ack_error_becomes_its_typed_error_and_status(
    ack_error: pb.Ack.Error.ValueType, refusal: type[LiftlogError], status: str
) -> None:
    error = ack_refusal(pb.Ack(ackError=ack_error))
    assert isinstance(error, refusal)
    assert grpc_code(error).name == status


def test_an_unknown_ack_error_is_unknown_and_ok_is_no_error() -> None:
    error = ack_refusal(pb.Ack(ackError=pb.Ack.UNKNOWN))
    assert error is not None and grpc_code(error).name == "UNKNOWN"
    assert async_error(error).code == pb.PublishAsyncError.UNKNOWN
    assert ack_refusal(pb.Ack(offset=3)) is None


def test_an_ack_is_full_in_unix_nanoseconds() -> None:
    ack = FIELDS.ack(7, 2_000)
    assert (ack.stream, ack.partitionSubject, ack.msgSubject, ack.offset) == (
        "s",
        "s.in",
        "s.in",
        7,
    )
    assert (ack.ackInbox, ack.correlationId, ack.ackPolicy) == ("_INBOX.client.1", "c-1", pb.ALL)
    assert (ack.receptionTimestamp, ack.commitTimestamp) == (1_000, 2_000)


def test_a_leaders_ack_keeps_its_fields_and_the_clients_inbox() -> None:
    leaders = pb.Ack(stream="s", offset=9, ackInbox="_INBOX.node.4", commitTimestamp=5_000)
    full = FIELDS.complete(leaders, 6_000)
    assert (full.offset, full.commitTimestamp, full.ackInbox) == (9, 5_000, "_INBOX.client.1")
    assert (full.partitionSubject, full.correlationId) == ("s.in", "c-1")
    assert FIELDS.complete(pb.Ack(offset=1), 6_000).commitTimestamp == 6_000


def test_an_inbox_reads_enveloped_acks_and_liftlog_json_acks() -> None:
    assert read_ack(encode_ack(pb.Ack(stream="s", offset=4, correlationId="c"))).offset == 4
    assert read_ack(json.dumps({"stream": "s", "partition": 0, "offset": 8}).encode()).offset == 8
    with pytest.raises(NotEnoughReplicasError):
        read_ack(encode_error(NotEnoughReplicasError("isr"), "s", 0))
