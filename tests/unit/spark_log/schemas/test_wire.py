"""Confluent's wire format: magic byte, big-endian schema id, payload."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_log.errors import InvalidRequestError
from spark_log.schemas.wire import HEADER_SIZE, MAGIC, frame, unframe


def test_frame_matches_confluent_header_bytes() -> None:
    assert frame(258, b"payload") == struct.pack(">bI", 0, 258) + b"payload"
    assert frame(0xFFFFFFFF, b"")[1:] == b"\xff\xff\xff\xff"
    assert HEADER_SIZE == 5 and MAGIC == 0


@given(st.integers(min_value=0, max_value=0xFFFFFFFF), st.binary(max_size=64))
def test_frame_round_trips(schema_id: int, payload: bytes) -> None:
    assert unframe(frame(schema_id, payload)) == (schema_id, payload)
    assert unframe(struct.pack(">bI", 0, schema_id) + payload) == (schema_id, payload)


@pytest.mark.parametrize("data", [b"", b"\x00\x00\x00\x01", b"\x01\x00\x00\x00\x01x", b'{"a":1}'])
def test_unframed_values_are_none(data: bytes) -> None:
    assert unframe(data) is None


def test_header_alone_is_an_empty_payload() -> None:
    assert unframe(b"\x00\x00\x00\x00\x07") == (7, b"")


@pytest.mark.parametrize("schema_id", [-1, 2**32])
def test_frame_refuses_ids_outside_32_bits(schema_id: int) -> None:
    with pytest.raises(InvalidRequestError):
        frame(schema_id, b"")
