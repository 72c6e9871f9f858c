"""Fuzzing the record-batch decoder: damaged or invented bytes raise CorruptRecordError and never
yield records; any other exception (IndexError, struct.error, an Arrow error) is a defect."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st

from spark_log.errors import CorruptRecordError
from spark_log.log import build_record_batch, encode_batch, iter_batches, records_from_batches
from spark_log.log.batch import CRC_END, HEADER_SIZE, LOG_OVERHEAD, MAGIC, decode_records
from tests.support.fuzz_profiles import fuzz_settings

pytestmark = pytest.mark.fuzz

_BASE_TS = 1_700_000_000_000


@st.composite
def batches(draw: st.DrawFn) -> bytes:
    """A valid batch of 1..5 records with keys, values, headers and subjects drawn freely."""
    count = draw(st.integers(1, 5))
    values = draw(st.lists(st.binary(max_size=40), min_size=count, max_size=count))
    keys = draw(st.lists(st.none() | st.binary(max_size=8), min_size=count, max_size=count))
    headers = draw(
        st.lists(
            st.none() | st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2),
            min_size=count,
            max_size=count,
        )
    )
    subjects = draw(st.lists(st.text(min_size=1, max_size=8), min_size=count, max_size=count))
    base = draw(st.integers(0, 2**40))
    records = build_record_batch(
        [_BASE_TS + i for i in range(count)], keys, values, headers, subjects
    )
    return encode_batch(base, draw(st.integers(0, 1000)), records)


def _decode_all(buf: bytes) -> list[object]:
    """Everything a reader would take from ``buf``: headers, Arrow rows and Python records."""
    out: list[object] = []
    for header, view in iter_batches(buf, verify=True):
        rows = decode_records(view)
        out.extend(rows.to_pylist())
        out.extend(records_from_batches(view, header.base_offset, header.next_offset, 100))
    return out


@given(batches(), st.data())
@fuzz_settings()
def test_flipped_bits_after_the_offset_field_are_always_refused(batch, data):
    """Every byte from ``batch_length`` on is covered by the CRC or the framing checks."""
    position = data.draw(st.integers(8, len(batch) - 1), label="position")
    bit = data.draw(st.integers(0, 7), label="bit")
    damaged = bytearray(batch)
    damaged[position] ^= 1 << bit
    with pytest.raises(CorruptRecordError):
        _decode_all(bytes(damaged))


@given(batches(), st.data())
@fuzz_settings()
def test_truncated_batches_are_torn(batch, data):
    cut = data.draw(st.integers(1, len(batch) - 1), label="cut")  # 0: no batch at all
    with pytest.raises(CorruptRecordError):
        _decode_all(batch[:cut])


@given(st.lists(batches(), min_size=1, max_size=3), st.binary(min_size=1, max_size=64))
@fuzz_settings()
def test_garbage_after_good_batches_is_refused_after_them(good, garbage):
    buf = b"".join(good) + garbage
    seen = 0
    with pytest.raises(CorruptRecordError):
        for _header, _view in iter_batches(buf, verify=True):
            seen += 1
    assert seen >= len(good)


@given(st.binary(max_size=200))
@fuzz_settings()
def test_arbitrary_bytes_never_crash_the_decoder(buf):
    try:
        _decode_all(buf)
    except CorruptRecordError:
        return


@given(batches(), st.binary(max_size=300), st.integers(1, 5))
@fuzz_settings()
def test_a_valid_frame_around_an_invented_payload_is_refused_or_decodes_cleanly(
    batch, payload, count
):
    """A CRC only proves the bytes are the writer's: a frame whose CRC matches but whose
    payload is not an Arrow record batch of the record schema must still be refused, never
    read out of bounds."""
    framed = _reframe(batch[:HEADER_SIZE], payload, count)
    try:
        rows = _decode_all(framed)
    except CorruptRecordError:
        return
    assert len(rows) == 2 * count  # only a real batch of ``count`` records decodes


@given(batches(), st.data())
@fuzz_settings()
def test_a_valid_frame_around_a_damaged_payload_is_refused_or_decodes_cleanly(batch, data):
    """The hardest case: the payload is damaged and the CRC recomputed (a buggy writer)."""
    payload = bytearray(batch[HEADER_SIZE:])
    for _ in range(data.draw(st.integers(1, 4), label="flips")):
        payload[data.draw(st.integers(0, len(payload) - 1))] ^= data.draw(st.integers(1, 255))
    count = struct.unpack_from(">i", batch, 35)[0]
    try:
        _decode_all(_reframe(batch[:HEADER_SIZE], bytes(payload), count))
    except CorruptRecordError:
        return


def _reframe(header: bytes, payload: bytes, count: int) -> bytes:
    """``payload`` in a well-formed frame: right length, magic, count and CRC."""
    base_offset = struct.unpack_from(">q", header, 0)[0]
    tail = struct.pack(">bhiiqq", MAGIC, 0, 0, count, _BASE_TS, _BASE_TS)
    length = CRC_END - LOG_OVERHEAD + len(tail) + len(payload)
    crc = crc32c(payload, crc32c(tail))
    return struct.pack(">qiI", base_offset, length, crc) + tail + payload
