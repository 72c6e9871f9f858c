"""Fuzzing the Arrow producer-batch path (REST bodies and ``Liftlog-Batch: arrow`` messages):
arbitrary bytes and arbitrary Arrow tables end in a typed refusal, or in records that store,
read back and render as JSON like any others (a batch accepted once is served forever, so
whatever passes here must never break a fetch)."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from ingest.api.fetch_json import record_json
from ingest.produce.request import decode_arrow_stream, local_request, normalize_batch_table
from ingest.produce.sequencer import _batch_records
from spark_log.errors import InvalidRequestError, RecordTooLargeError
from spark_log.log import encode_batch, records_from_batches
from spark_log.stream_spec import StreamSpec
from tests.support.fuzz_profiles import fuzz_settings

pytestmark = pytest.mark.fuzz

SPEC = StreamSpec(name="fuzz", subject="fuzz.in", max_record_bytes=4096)
NOW_MS = 1_700_000_000_000
REFUSALS = (InvalidRequestError, RecordTooLargeError)

_SCALAR_TYPES = [
    pa.binary(),
    pa.large_binary(),
    pa.string(),
    pa.large_string(),
    pa.int64(),
    pa.float64(),
    pa.bool_(),
    pa.null(),
    pa.timestamp("ms"),
]
_HEADER_STRUCTS = [
    pa.struct([("key", pa.string()), ("value", pa.binary())]),
    pa.struct([("key", pa.binary()), ("value", pa.string())]),
    pa.struct([("value", pa.binary()), ("key", pa.string())]),
    pa.struct([("key", pa.string())]),
    pa.struct([("key", pa.int32()), ("value", pa.binary())]),
    pa.struct([("key", pa.string()), ("value", pa.binary()), ("extra", pa.int8())]),
]


def _types() -> st.SearchStrategy[pa.DataType]:
    headers = st.sampled_from(_HEADER_STRUCTS).flatmap(
        lambda s: st.sampled_from([pa.list_(s), pa.large_list(s), s])
    )
    return st.sampled_from(_SCALAR_TYPES) | headers | st.just(pa.list_(pa.binary()))


@st.composite
def tables(draw: st.DrawFn) -> pa.Table:
    """Tables with names from the expected ones (and some others, duplicates allowed), any of
    a set of types, nulls and odd values included."""
    rows = draw(st.integers(1, 4) | st.just(0))
    names = draw(
        st.sampled_from([["value"], ["value", "key"], ["key", "value", "headers"]])
        | st.lists(st.sampled_from(["value", "key", "headers", "other", ""]), max_size=4)
    )
    columns = [_column(draw, draw(_likely_types(name)), rows) for name in names]
    return pa.Table.from_arrays(columns, names=names) if names else pa.table({})


def _likely_types(name: str) -> st.SearchStrategy[pa.DataType]:
    """Mostly the types a column of that name may have, sometimes any other."""
    likely = {
        "value": st.sampled_from([pa.binary(), pa.string(), pa.large_binary()]),
        "key": st.sampled_from([pa.binary(), pa.string()]),
        "headers": st.sampled_from(_HEADER_STRUCTS[:3]).map(pa.list_),
    }.get(name, _types())
    return st.one_of(likely, likely, _types())


def _column(draw: st.DrawFn, type_: pa.DataType, rows: int) -> pa.Array:
    values = [draw(_value(type_)) for _ in range(rows)]
    return pa.array(values, type_)


def _value(type_: pa.DataType) -> st.SearchStrategy[object]:
    if pa.types.is_null(type_):
        return st.none()
    if pa.types.is_binary(type_) or pa.types.is_large_binary(type_):
        return _rarely_null(st.binary(max_size=8))
    if pa.types.is_string(type_) or pa.types.is_large_string(type_):
        return _rarely_null(st.text(max_size=8))
    if pa.types.is_integer(type_):
        bits = type_.bit_width - 1
        return _rarely_null(st.integers(-(2**bits), 2**bits - 1))
    if pa.types.is_floating(type_):
        return _rarely_null(st.floats(allow_nan=True))
    if pa.types.is_boolean(type_):
        return _rarely_null(st.booleans())
    if pa.types.is_timestamp(type_):
        return _rarely_null(st.integers(0, 2**40))
    if pa.types.is_struct(type_):
        return _rarely_null(st.fixed_dictionaries({f.name: _value(f.type) for f in type_}))
    return _rarely_null(st.lists(_value(type_.value_type), max_size=3))


def _rarely_null(values: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.one_of(values, values, values, st.none())


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _accept_or_refuse(table: pa.Table) -> None:
    """Normalize; if accepted, the records store, decode and render like any others."""
    try:
        normalized = normalize_batch_table(table, SPEC)
    except REFUSALS as exc:
        event(f"refused: {exc.message[:40]}")
        return
    event("accepted")
    request = local_request(SPEC.subject, "leader", records=normalized)
    batch = encode_batch(0, 0, _batch_records(request, NOW_MS))
    records = records_from_batches(batch, 0, normalized.num_rows, normalized.num_rows)
    assert len(records) == normalized.num_rows == table.num_rows
    for record in records:
        json.dumps(record_json(record, "base64"))
        json.dumps(record_json(record, "utf-8"))


@given(tables())
@fuzz_settings()
def test_any_arrow_table_is_refused_or_stored_safely(table):
    _accept_or_refuse(table)


@given(st.binary(max_size=300))
@fuzz_settings()
def test_arbitrary_bytes_are_not_an_arrow_stream(data):
    try:
        _accept_or_refuse(decode_arrow_stream(data, "body"))
    except InvalidRequestError:
        return


@given(tables(), st.data())
@fuzz_settings()
def test_damaged_arrow_streams_are_refused_or_stored_safely(table, data):
    stream = bytearray(_ipc(table))
    for _ in range(data.draw(st.integers(1, 4), label="flips")):
        stream[data.draw(st.integers(0, len(stream) - 1))] ^= data.draw(st.integers(1, 255))
    cut = data.draw(st.integers(0, len(stream)), label="cut")
    try:
        decoded = decode_arrow_stream(bytes(stream[:cut]), "body")
    except InvalidRequestError:
        return
    _accept_or_refuse(decoded)


_HEADER_ENTRY = st.fixed_dictionaries(
    {"key": _rarely_null(st.text(max_size=6)), "value": _rarely_null(st.binary(max_size=6))}
)


@st.composite
def batch_tables(draw: st.DrawFn) -> pa.Table:
    """Tables in the documented layout whose contents are drawn freely (nulls inside headers,
    empty and non-UTF-8 values included)."""
    rows = draw(st.integers(1, 5))
    values = draw(st.lists(st.binary(max_size=12), min_size=rows, max_size=rows))
    keys = draw(st.lists(_rarely_null(st.binary(max_size=6)), min_size=rows, max_size=rows))
    headers = draw(
        st.lists(
            _rarely_null(st.lists(_rarely_null(_HEADER_ENTRY), max_size=3)),
            min_size=rows,
            max_size=rows,
        )
    )
    return pa.table(
        {
            "key": pa.array(keys, pa.binary()),
            "value": pa.array(values, pa.binary()),
            "headers": pa.array(headers, pa.list_(_HEADER_STRUCTS[0])),
        }
    )


@given(batch_tables())
@fuzz_settings()
def test_documented_layout_with_any_contents_is_refused_or_stored_safely(table):
    _accept_or_refuse(table)
    _accept_or_refuse(decode_arrow_stream(_ipc(table), "body"))


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_compressed_streams_are_refused_before_they_expand(codec):
    """8 KiB of ZSTD holds 256 MiB of zeros: refused from the metadata, nothing decompressed."""
    bomb = pa.table({"value": pa.array([bytes(64 * 1024 * 1024)], pa.binary())})
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=codec)
    with pa.ipc.new_stream(sink, bomb.schema, options=options) as writer:
        writer.write_table(bomb)
    data = sink.getvalue().to_pybytes()
    assert len(data) < 1024 * 1024
    with pytest.raises(InvalidRequestError, match="compressed"):
        decode_arrow_stream(data, "body")


@pytest.mark.parametrize(
    "column",
    [
        pa.array([b"x" * 100] * 4).dictionary_encode(),
        pa.array([b"x" * 100] * 4, pa.binary_view()),
        pa.RunEndEncodedArray.from_arrays(pa.array([4], pa.int32()), pa.array([b"x" * 100])),
    ],
    ids=["dictionary", "binary-view", "run-end-encoded"],
)
def test_encodings_that_expand_when_decoded_are_refused(column):
    table = decode_arrow_stream(_ipc(pa.table({"value": column})), "body")
    with pytest.raises(InvalidRequestError, match="may expand"):
        normalize_batch_table(table, SPEC)
