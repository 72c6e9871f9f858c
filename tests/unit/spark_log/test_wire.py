"""Ack encoding and typed error round trips."""

from __future__ import annotations

import json

import pytest

from spark_log.errors import ExpectedOffsetMismatchError, LiftlogError, RecordTooLargeError
from spark_log.wire import ack_prefix, decode_ack, encode_ack, encode_error, parse_ack


def test_ack_json_shape():
    prefix = ack_prefix('we"ird', 2)
    assert json.loads(encode_ack(prefix, 41)) == {"stream": 'we"ird', "partition": 2, "offset": 41}
    assert json.loads(encode_ack(prefix, 5, 10))["count"] == 10


def test_error_ack_round_trip_is_typed():
    payload = encode_error(RecordTooLargeError("too big"), "s", 0)
    assert parse_ack(payload)["stream"] == "s"
    with pytest.raises(RecordTooLargeError, match="too big"):
        decode_ack(payload)
    with pytest.raises(ExpectedOffsetMismatchError):
        decode_ack(encode_error(ExpectedOffsetMismatchError("x")))


def test_unknown_error_codes_and_garbage():
    with pytest.raises(LiftlogError) as info:
        decode_ack(b'{"error": {"code": "brand_new", "message": "m"}}')
    assert info.value.code == "brand_new"
    with pytest.raises(LiftlogError):
        decode_ack(b"not json")
    with pytest.raises(LiftlogError):
        parse_ack(b"[]")
