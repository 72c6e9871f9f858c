"""Liftbridge's NATS envelope codec: round trips with and without the CRC, and every refusal
(no magic, truncated, unknown version, wrong type, bad header length, CRC mismatch, an
undecodable protobuf) as ``EnvelopeError``, whatever bytes follow the magic number."""

from __future__ import annotations

import struct

import crc32c
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from spark_log.errors import InvalidRequestError
from spark_log.liftbridge import api_pb2 as pb
from spark_log.liftbridge.envelope import (
    MAGIC,
    EnvelopeError,
    decode_ack,
    decode_publish,
    encode_ack,
    encode_publish,
    is_envelope,
)
from tests.support.fuzz_profiles import fuzz_settings

MESSAGE = pb.Message(
    offset=7,
    key=b"user-7",
    value=b"\x00\xffpayload",
    headers={"trace": b"abc", "empty": b""},
    ackInbox="_INBOX.acks",
    correlationId="c-1",
    ackPolicy=pb.ALL,
)
ACK = pb.Ack(
    stream="orders",
    partitionSubject="orders.in",
    msgSubject="orders.in",
    offset=42,
    ackInbox="_INBOX.acks",
    correlationId="c-1",
    ackPolicy=pb.LEADER,
    receptionTimestamp=1_700_000_000_000_000_000,
    commitTimestamp=1_700_000_000_000_000_001,
    ackError=pb.Ack.TOO_LARGE,
)


@pytest.mark.parametrize("crc", [False, True])
def test_publish_and_ack_round_trip(crc: bool):
    assert decode_publish(encode_publish(MESSAGE, crc=crc)) == MESSAGE
    assert decode_ack(encode_ack(ACK, crc=crc)) == ACK


def test_the_header_is_liftbridges_eight_or_twelve_bytes():
    plain = encode_publish(MESSAGE)
    assert plain[:8] == MAGIC + bytes((0, 8, 0, 0))
    assert plain[8:] == MESSAGE.SerializeToString()
    with_crc = encode_ack(ACK, crc=True)
    payload = ACK.SerializeToString()
    assert with_crc[:8] == MAGIC + bytes((0, 12, 1, 1))
    assert with_crc[8:12] == struct.pack(">I", crc32c.crc32c(payload))
    assert with_crc[12:] == payload


def test_an_empty_message_is_a_valid_envelope():
    assert decode_publish(encode_publish(pb.Message())) == pb.Message()


def test_is_envelope_is_the_magic_prefix():
    assert is_envelope(encode_publish(MESSAGE))
    assert not is_envelope(b"plain payload")
    assert not is_envelope(MAGIC[:3])


def test_the_error_is_an_invalid_request():
    assert issubclass(EnvelopeError, InvalidRequestError)
    assert EnvelopeError.code == "invalid_request"


def _refused(data: bytes, match: str) -> None:
    with pytest.raises(EnvelopeError, match=match):
        decode_publish(data)


def test_no_magic_number_is_refused():
    _refused(b"\x00" * 16, "no magic number")


@pytest.mark.parametrize("cut", [4, 5, 7])
def test_a_truncated_header_is_refused(cut: int):
    _refused(encode_publish(MESSAGE)[:cut], "truncated header")


def test_an_unknown_version_is_refused():
    data = bytearray(encode_publish(MESSAGE))
    data[4] = 1
    _refused(bytes(data), "unknown version 1")


def test_the_wrong_message_type_is_refused():
    _refused(encode_ack(ACK), "message type 1, expected 0")
    with pytest.raises(EnvelopeError, match="message type 0, expected 1"):
        decode_ack(encode_publish(MESSAGE))
    data = bytearray(encode_publish(MESSAGE))
    data[7] = 2  # a replication request: internal to Liftbridge, never a client's publish
    _refused(bytes(data), "message type 2")


@pytest.mark.parametrize(
    ("header_len", "flags", "size"),
    [
        (7, 0, 32),  # shorter than the header itself
        (40, 0, 32),  # past the end of the data
        (8, 1, 32),  # a CRC flag without room for the CRC
        (16, 1, 32),  # a CRC flag with a header that is not 12 bytes
        (12, 1, 10),  # a CRC header cut short
    ],
)
def test_a_bad_header_length_is_refused(header_len: int, flags: int, size: int):
    data = (MAGIC + bytes((0, header_len, flags, 0)) + b"\x00" * 32)[:size]
    _refused(data, "header length")


def test_a_crc_mismatch_is_refused():
    data = bytearray(encode_publish(MESSAGE, crc=True))
    data[-1] ^= 0x01
    _refused(bytes(data), "CRC-32C mismatch")
    data = bytearray(encode_publish(MESSAGE, crc=True))
    data[9] ^= 0x01  # the CRC itself
    _refused(bytes(data), "CRC-32C mismatch")


def test_without_the_crc_flag_a_corrupt_payload_is_caught_only_if_undecodable():
    data = encode_publish(MESSAGE)
    assert decode_publish(data[:8] + data[8:]) == MESSAGE
    _refused(data[:8] + b"\xff\xff\xff", "undecodable protobuf")


def test_an_undecodable_protobuf_is_refused():
    # field 3 (value, length-delimited) claiming 100 bytes of which 2 follow
    _refused(MAGIC + bytes((0, 8, 0, 0)) + b"\x1a\x64ab", "undecodable protobuf")
    # a string field (ackInbox) that is not UTF-8
    _refused(MAGIC + bytes((0, 8, 0, 0)) + b"\x52\x02\xff\xfe", "undecodable protobuf")


@given(st.binary(max_size=64))
@fuzz_settings(quick_examples=400)
def test_any_bytes_after_the_magic_decode_or_raise_envelope_error(tail: bytes):
    for decode in (decode_publish, decode_ack):
        try:
            decoded = decode(MAGIC + tail)
        except EnvelopeError:
            event("refused")
            continue
        event("decoded")
        assert decoded.IsInitialized()


@given(st.binary(max_size=48), st.booleans())
@fuzz_settings(quick_examples=200)
def test_any_valid_header_with_any_payload_decodes_or_raises_envelope_error(
    payload: bytes, crc: bool
):
    header = MAGIC + bytes((0, 12 if crc else 8, int(crc), 0))
    if crc:
        header += struct.pack(">I", crc32c.crc32c(payload))
    try:
        decode_publish(header + payload)
    except EnvelopeError:
        event("refused")
