"""Enveloped acks through the ack router: an enveloped request is answered with Liftbridge's
``Ack`` (after the append, from the purgatory, or refused), a plain one with JSON as before."""

from __future__ import annotations

import json

import pytest

from ingest.produce.ack_router import AckRouter
from ingest.produce.envelope_acks import EnvelopeAck, ack_error
from ingest.produce.request import ProduceRequest
from ingest.produce.sequencer import Sequenced
from spark_log.errors import (
    ExpectedOffsetMismatchError,
    KeyUnavailableError,
    LiftlogError,
    NotLeaderError,
    RecordTooLargeError,
)
from spark_log.liftbridge import api_pb2 as pb
from spark_log.liftbridge.envelope import decode_ack
from spark_log.wire import ack_prefix, encode_ack, encode_duplicate_ack, encode_error

NOW_NS = 1_700_000_000_123_000_000
ANSWER = EnvelopeAck(
    stream="orders",
    partition_subject="orders.in",
    msg_subject="orders.in",
    ack_inbox="_INBOX.a",
    correlation_id="c-1",
    ack_policy=pb.ALL,
    reception_ns=NOW_NS - 5,
)


def _router(sent: list[tuple[str, bytes]]) -> AckRouter:
    return AckRouter(
        ack_prefix("orders", 0),
        lambda subject, payload: sent.append((subject, payload)),
        encode_ack,
        encode_error,
        encode_duplicate_ack,
        now_ns=lambda: NOW_NS,
    )


def _enveloped(policy: str = "all") -> ProduceRequest:
    return ProduceRequest("orders.in", "_INBOX.a", policy, None, None, value=b"v", envelope=ANSWER)


def test_an_enveloped_acks_all_request_is_answered_from_the_purgatory():
    sent: list[tuple[str, bytes]] = []
    router = _router(sent)
    plain = ProduceRequest("orders.in", "r1", "all", None, None, value=b"p")
    router.after_append(
        [Sequenced(_enveloped(), 3, 1), Sequenced(plain, 4, 1)], end_offset=5, hw=3, isr_ok=True
    )
    assert sent == []
    router.purgatory.release(5)
    (inbox, payload), (reply, plain_ack) = sent
    ack = decode_ack(payload)
    assert inbox == "_INBOX.a"
    assert (ack.stream, ack.offset, ack.correlationId, ack.ackPolicy) == ("orders", 3, "c-1", 1)
    assert (ack.receptionTimestamp, ack.commitTimestamp) == (NOW_NS - 5, NOW_NS)
    assert ack.ackError == pb.Ack.OK
    assert reply == "r1"
    assert json.loads(plain_ack) == {"stream": "orders", "partition": 0, "offset": 4}


def test_a_parked_enveloped_request_fails_as_an_ack_error():
    sent: list[tuple[str, bytes]] = []
    router = _router(sent)
    router.after_append([Sequenced(_enveloped(), 0, 1)], end_offset=1, hw=0, isr_ok=True)
    router.purgatory.fail_all(NotLeaderError("deposed"))
    ((inbox, payload),) = sent
    assert (inbox, decode_ack(payload).ackError) == ("_INBOX.a", pb.Ack.UNKNOWN)


def test_an_enveloped_none_request_gets_no_success_ack_but_its_refusal():
    sent: list[tuple[str, bytes]] = []
    router = _router(sent)
    req = _enveloped("none")
    router.after_append([Sequenced(req, 0, 1)], end_offset=1, hw=1, isr_ok=True)
    assert sent == []
    router.error(req, RecordTooLargeError("too big"))
    assert decode_ack(sent[0][1]).ackError == pb.Ack.TOO_LARGE


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (ExpectedOffsetMismatchError("x"), pb.Ack.INCORRECT_OFFSET),
        (RecordTooLargeError("x"), pb.Ack.TOO_LARGE),
        (KeyUnavailableError("x"), pb.Ack.ENCRYPTION),
        (NotLeaderError("x"), pb.Ack.UNKNOWN),
    ],
)
def test_errors_map_to_liftbridges_ack_errors(error: LiftlogError, expected: int):
    assert ack_error(error) == expected
