"""Arrow fetch tables built from stored batches hold exactly what the Record path returns."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_log.log import records_from_batches
from spark_log.log.fetch_table import FETCH_SCHEMA, encode_fetch_table, table_from_batches

from .conftest import BASE_TS, make_batch


def _data() -> bytes:
    """Batches at offsets 10..12, 13..17, 18..19 (as a log read returns them)."""
    return make_batch(10, 3) + make_batch(13, 5) + make_batch(18, 2)


def _as_rows(table: pa.Table) -> list[tuple]:
    return [
        (
            row["offset"],
            int(row["timestamp"].timestamp() * 1000),
            row["key"],
            row["value"],
            [(h["key"], h["value"]) for h in row["headers"] or []],
            row["subject"],
        )
        for row in table.to_pylist()
    ]


@settings(max_examples=60, deadline=None)
@given(
    start=st.integers(min_value=8, max_value=21),
    end=st.integers(min_value=8, max_value=22),
    max_records=st.integers(min_value=1, max_value=12),
)
def test_table_matches_the_record_path(start, end, max_records):
    if start > end:
        assert table_from_batches(_data(), start, end, max_records).num_rows == 0
        return
    data = _data()
    table = table_from_batches(data, start, end, max_records)
    records = records_from_batches(data, start, end, max_records)
    assert table.schema == FETCH_SCHEMA
    expected = [
        (r.offset, r.timestamp, r.key, r.value, list(r.headers), r.subject) for r in records
    ]
    assert _as_rows(table) == expected


def test_offsets_are_dense_and_timestamps_are_utc_ms():
    table = table_from_batches(_data(), 11, 19, 100)
    assert table.column("offset").to_pylist() == list(range(11, 19))
    assert table.schema.field("timestamp").type == pa.timestamp("ms", tz="UTC")
    first = table.column("timestamp")[0].value
    assert first == BASE_TS + 1  # the factory stamps base + row


def test_encoded_stream_round_trips_and_empty_has_the_schema():
    table = table_from_batches(_data(), 10, 20, 100)
    decoded = pa.ipc.open_stream(pa.py_buffer(encode_fetch_table(table))).read_all()
    assert decoded.equals(table)
    empty = pa.ipc.open_stream(pa.py_buffer(encode_fetch_table(None))).read_all()
    assert empty.num_rows == 0
    assert empty.schema == FETCH_SCHEMA
