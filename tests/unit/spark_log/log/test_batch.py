"""The record-batch wire format: framing, CRC, Arrow payload, record decoding."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_log.errors import CorruptRecordError, InvalidRequestError
from spark_log.log import (
    HEADER_SIZE,
    RECORD_SCHEMA,
    build_record_batch,
    decode_header,
    decode_records,
    encode_batch,
    iter_batches,
    records_from_batches,
    verify_batch,
)
from spark_log.log.records import header_lists

from .conftest import make_batch


def sample_records() -> pa.RecordBatch:
    return build_record_batch(
        [100, 300, 200],
        [b"a", None, b""],
        [b"x", b"", b"\x00\xff" * 10],
        [None, {"h1": "v1", "h2": "v2"}, [("k", b"\x00bin"), ("k", b"dup")]],
        ["s.a", "s.b", ""],
    )


def test_header_layout_is_43_big_endian_bytes():
    batch = encode_batch(7, 3, sample_records())
    header = verify_batch(batch)
    assert HEADER_SIZE == 43
    assert header.size == len(batch) == 12 + header.batch_length
    assert struct.unpack_from(">q", batch, 0)[0] == 7
    assert (header.magic, header.attributes, header.leader_epoch) == (1, 0, 3)
    assert (header.record_count, header.first_timestamp_ms, header.max_timestamp_ms) == (
        3,
        100,
        300,
    )
    assert (header.last_offset, header.next_offset) == (9, 10)


def test_payload_is_a_bare_arrow_record_batch_message():
    batch = encode_batch(0, 0, sample_records())
    payload = pa.py_buffer(batch[HEADER_SIZE:])
    assert pa.ipc.read_record_batch(payload, RECORD_SCHEMA).num_rows == 3


def test_round_trip_keeps_keys_null_keys_and_headers():
    records = records_from_batches(encode_batch(10, 0, sample_records()), 0, 100, 100)
    assert [r.offset for r in records] == [10, 11, 12]
    assert [r.key for r in records] == [b"a", None, b""]
    assert [r.value for r in records] == [b"x", b"", b"\x00\xff" * 10]
    assert records[0].headers == []
    assert records[1].headers == [("h1", b"v1"), ("h2", b"v2")]
    assert records[2].headers == [("k", b"\x00bin"), ("k", b"dup")]
    assert [r.timestamp for r in records] == [100, 300, 200]
    assert [r.subject for r in records] == ["s.a", "s.b", ""]


def test_decode_records_returns_the_arrow_batch():
    rb = sample_records()
    assert decode_records(encode_batch(0, 0, rb)).equals(rb)


@given(st.integers(min_value=16, max_value=700), st.integers(min_value=1, max_value=255))
@settings(max_examples=60, deadline=None)
def test_crc_detects_any_flipped_byte_after_the_crc_field(position, flip):
    batch = bytearray(encode_batch(0, 0, sample_records()))
    position = position % len(batch)
    if position < 16:
        position += 16
    batch[position] ^= flip
    with pytest.raises(CorruptRecordError):
        verify_batch(batch)


def test_bad_magic_is_rejected():
    batch = bytearray(make_batch(0))
    batch[16] = 2
    with pytest.raises(CorruptRecordError, match="magic"):
        decode_header(batch)


@pytest.mark.parametrize("length", [-1, 0, 30])
def test_impossible_length_is_rejected(length):
    batch = bytearray(make_batch(0))
    struct.pack_into(">i", batch, 8, length)
    with pytest.raises(CorruptRecordError, match="length"):
        decode_header(batch)


def test_length_past_the_buffer_is_a_torn_batch():
    batch = make_batch(0)
    with pytest.raises(CorruptRecordError, match="torn"):
        decode_header(batch[:-1])
    with pytest.raises(CorruptRecordError, match="short"):
        decode_header(batch[:20])


def test_zero_record_count_is_rejected():
    batch = bytearray(make_batch(0))
    struct.pack_into(">i", batch, 23, 0)
    with pytest.raises(CorruptRecordError):
        decode_header(batch)


def test_iter_batches_walks_concatenated_batches_and_rejects_a_bad_one():
    data = make_batch(0, 2) + make_batch(2, 5) + make_batch(7, 1)
    assert [h.base_offset for h, _ in iter_batches(data)] == [0, 2, 7]
    assert [bytes(v) for _, v in iter_batches(data)] == [
        make_batch(0, 2),
        make_batch(2, 5),
        make_batch(7, 1),
    ]
    corrupt = bytearray(data)
    corrupt[-5] ^= 1
    seen = []
    with pytest.raises(CorruptRecordError):
        for header, _ in iter_batches(bytes(corrupt)):
            seen.append(header.base_offset)
    assert seen == [0, 2]
    assert len(list(iter_batches(bytes(corrupt), verify=False))) == 3
    with pytest.raises(CorruptRecordError):
        list(iter_batches(data + b"\x00" * 10))


def test_records_from_batches_filters_by_offset_range_and_count():
    data = make_batch(0, 4) + make_batch(4, 4) + make_batch(8, 4)
    assert [r.offset for r in records_from_batches(data, 2, 10, 100)] == list(range(2, 10))
    assert [r.offset for r in records_from_batches(data, 3, 12, 4)] == [3, 4, 5, 6]
    assert records_from_batches(data, 0, 12, 0) == []
    assert records_from_batches(data, 12, 20, 10) == []
    assert records_from_batches(b"", 0, 10, 10) == []
    sliced = records_from_batches(data, 5, 6, 10)
    assert [(r.offset, r.headers) for r in sliced] == [(5, [("n", b"5")])]


def test_header_lists_respects_slices_and_nulls():
    column = sample_records().column("headers")
    assert header_lists(column.slice(1, 2)) == [
        [("h1", b"v1"), ("h2", b"v2")],
        [("k", b"\x00bin"), ("k", b"dup")],
    ]
    assert header_lists(column.slice(0, 1)) == [[]]


def test_encode_batch_casts_compatible_types():
    rb = sample_records()
    loose = pa.RecordBatch.from_arrays(
        [rb.column(0).cast(pa.int32()), rb.column(1).cast(pa.large_binary()), *rb.columns[2:]],
        names=RECORD_SCHEMA.names,
    )
    assert decode_records(encode_batch(0, 0, loose)).equals(rb)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda rb: rb.drop_columns(["subject"]),
        lambda rb: rb.rename_columns(["ts", "key", "value", "headers", "subject"]),
        lambda rb: rb.slice(0, 0),
        lambda rb: rb.set_column(2, "value", pa.array([b"a", None, b"c"], pa.binary())),
        lambda rb: rb.set_column(0, "timestamp", pa.array(["a", "b", "c"])),
    ],
)
def test_encode_batch_rejects_records_outside_the_schema(mutate):
    with pytest.raises(InvalidRequestError):
        encode_batch(0, 0, mutate(sample_records()))


def test_encode_batch_rejects_negative_offsets_and_epochs():
    with pytest.raises(InvalidRequestError):
        encode_batch(-1, 0, sample_records())
    with pytest.raises(InvalidRequestError):
        encode_batch(0, -1, sample_records())


def test_build_record_batch_rejects_ragged_or_mistyped_columns():
    with pytest.raises(InvalidRequestError):
        build_record_batch([1], [None, None], [b"a"], [None], ["s"])
    with pytest.raises(InvalidRequestError):
        build_record_batch([1], [None], [12345], [None], ["s"])  # type: ignore[list-item]


def test_build_record_batch_all_null_headers_is_a_null_column():
    rb = build_record_batch([1, 2], [None, None], [b"a", b"b"], [None, None], ["s", "s"])
    assert rb.column("headers").null_count == 2


record_strategy = st.tuples(
    st.integers(min_value=0, max_value=2**62),
    st.none() | st.binary(max_size=20),
    st.binary(max_size=50),
    st.none() | st.lists(st.tuples(st.text(max_size=5), st.binary(max_size=5)), max_size=3),
    st.text(max_size=10),
)


@given(
    st.lists(record_strategy, min_size=1, max_size=30), st.integers(0, 2**40), st.integers(0, 99)
)
@settings(max_examples=80, deadline=None)
def test_any_records_round_trip(rows, base_offset, epoch):
    ts, keys, values, headers, subjects = (list(c) for c in zip(*rows, strict=True))
    batch = encode_batch(
        base_offset, epoch, build_record_batch(ts, keys, values, headers, subjects)
    )
    header = verify_batch(batch)
    assert (header.first_timestamp_ms, header.max_timestamp_ms) == (ts[0], max(ts))
    records = records_from_batches(batch, 0, 2**62, len(rows))
    assert [r.offset for r in records] == list(range(base_offset, base_offset + len(rows)))
    assert [(r.timestamp, r.key, r.value, r.subject) for r in records] == list(
        zip(ts, keys, values, subjects, strict=True)
    )
    assert [r.headers for r in records] == [list(h or []) for h in headers]
