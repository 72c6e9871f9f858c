"""A tail task's batches: REST fetch rows and lake fallback rows rebatched into one output."""

from __future__ import annotations

import pyarrow as pa

from datasource.row_filter import RowFilter
from datasource.schema import output_arrow_schema
from datasource.task_read import tail_output
from datasource.tasks import ReadSettings
from spark_log.lake.layout import LAKE_SCHEMA
from spark_log.log.fetch_table import FETCH_SCHEMA

LAKE_FILE_SCHEMA = pa.schema([f for f in LAKE_SCHEMA if f.name != "partition"])
"""A lake file's schema: µs timestamps, every field but key and headers non-nullable."""
MS_SECOND = 1_000
US_SECOND = 1_000_000


def _settings(rows: RowFilter | None = None) -> ReadSettings:
    return ReadSettings(
        servers="http://a:1",
        stream="orders",
        include_headers=False,
        fail_on_data_loss=True,
        lake_uri=None,
        rows=rows or RowFilter(),
    )


def _lake_rows() -> pa.RecordBatch:
    """Offsets 10-11 as read_lake yields them after retention moved the log start."""
    return pa.RecordBatch.from_pydict(
        {
            "offset": [10, 11],
            "timestamp": [10 * US_SECOND, 11 * US_SECOND],
            "key": [b"a", None],
            "value": [b"v10", b"v11"],
            "headers": [None, None],
            "subject": ["orders.a", "orders.b"],
        },
        schema=LAKE_FILE_SCHEMA,
    )


def _fetch_rows() -> pa.RecordBatch:
    """Offsets 12-13 as the leader's REST Arrow fetch returns them."""
    return pa.RecordBatch.from_pydict(
        {
            "offset": [12, 13],
            "timestamp": [12 * MS_SECOND, 13 * MS_SECOND],
            "key": [None, b"b"],
            "value": [b"v12", b""],
            "headers": [None, None],
            "subject": ["orders.c", "orders.d"],
        },
        schema=FETCH_SCHEMA,
    )


def test_the_two_source_schemas_really_differ():
    lake, fetch = _lake_rows(), _fetch_rows()
    assert lake.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    assert fetch.schema.field("timestamp").type == pa.timestamp("ms", tz="UTC")
    assert not lake.schema.field("value").nullable and fetch.schema.field("value").nullable


def test_lake_and_fetch_rows_rebatch_into_one_output_batch():
    out = list(tail_output(iter([_lake_rows(), _fetch_rows()]), _settings(), 3, batch_rows=100))
    assert len(out) == 1
    batch = out[0]
    assert batch.schema.equals(output_arrow_schema(False))
    assert batch.column("offset").to_pylist() == [10, 11, 12, 13]
    micros = batch.column("timestamp").cast(pa.int64()).to_pylist()
    assert micros == [s * US_SECOND for s in (10, 11, 12, 13)]
    assert batch.column("key").to_pylist() == [b"a", None, None, b"b"]
    assert batch.column("value").to_pylist() == [b"v10", b"v11", b"v12", b""]
    assert batch.column("stream").to_pylist() == ["orders"] * 4
    assert batch.column("partition").to_pylist() == [3] * 4
    assert batch.column("subject").to_pylist() == ["orders.a", "orders.b", "orders.c", "orders.d"]


def test_batches_reaching_the_row_count_are_yielded_apart():
    out = list(tail_output(iter([_lake_rows(), _fetch_rows()]), _settings(), 3, batch_rows=2))
    assert [b.column("offset").to_pylist() for b in out] == [[10, 11], [12, 13]]
    assert all(b.schema.equals(output_arrow_schema(False)) for b in out)


def test_the_row_filter_applies_across_both_sources_and_no_empty_batch_is_yielded():
    keys_b = _settings(RowFilter(keys=frozenset({b"b"})))
    out = list(tail_output(iter([_lake_rows(), _fetch_rows()]), keys_b, 3, batch_rows=100))
    assert [b.column("offset").to_pylist() for b in out] == [[13]]
    late = _settings(RowFilter(min_timestamp_us=11 * US_SECOND, max_timestamp_us=12 * US_SECOND))
    out = list(tail_output(iter([_lake_rows(), _fetch_rows()]), late, 3, batch_rows=100))
    assert [b.column("offset").to_pylist() for b in out] == [[11, 12]]
    nothing = _settings(RowFilter(keys=frozenset({b"none"})))
    assert list(tail_output(iter([_lake_rows(), _fetch_rows()]), nothing, 3)) == []
    assert list(tail_output(iter([]), _settings(), 3)) == []
