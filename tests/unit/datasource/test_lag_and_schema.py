"""Lag from progress JSON; output batches in exactly the Arrow schema Spark checks."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from datasource.errors import CorruptRecordsError
from datasource.lag import records_behind, total_records_behind
from datasource.schema import constant_string, output_arrow_schema, output_struct, to_output_batch
from spark_log.lake.layout import file_location
from spark_log.log.batch import HEADERS_TYPE


def test_records_behind_from_progress():
    source = {
        "latestOffset": json.dumps({"s": {"0": 500, "1": 40}}),
        "endOffset": json.dumps({"s": {"0": 200, "1": 40}}),
    }
    assert records_behind(source) == {"s": {0: 300, 1: 0}}
    assert total_records_behind(source) == 300
    assert records_behind({"latestOffset": None, "endOffset": "{}"}) is None
    assert records_behind({"latestOffset": '{"topic": 5}', "endOffset": "{}"}) is None


def _rows(subject: pa.Array | None = None) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(
        {
            "offset": pa.array([7, 8], pa.int64()),
            "timestamp": pa.array([1, 2], pa.timestamp("ms", tz="UTC")),
            "key": pa.array([b"k", None]),
            "value": pa.array([b"v", b"w"]),
            "headers": pa.nulls(2, HEADERS_TYPE),
            "subject": subject if subject is not None else pa.array(["a", "b"]),
        }
    )


def test_only_key_and_headers_are_nullable():
    nullable = {f.name for f in output_struct(True).fields if f.nullable}
    assert nullable == {"key", "headers"}
    assert {f.name for f in output_arrow_schema(True) if f.nullable} == nullable


def test_a_null_in_a_non_nullable_column_fails_the_batch():
    with pytest.raises(CorruptRecordsError, match="'subject' has 1 null"):
        to_output_batch(_rows(pa.array(["a", None])), "orders", 3, False)


def test_output_batch_matches_sparks_schema():
    rows = _rows()
    for include in (True, False):
        batch = to_output_batch(rows, "orders", 3, include)
        assert batch.schema.equals(output_arrow_schema(include))
    batch = to_output_batch(rows, "orders", 3, False)
    assert batch.column("stream").to_pylist() == ["orders", "orders"]
    assert batch.column("partition").to_pylist() == [3, 3]
    assert batch.column("timestamp")[1].value == 2000  # ms → µs


def test_constant_string_and_file_paths():
    assert constant_string("ab", 3).to_pylist() == ["ab"] * 3
    assert constant_string("", 2).to_pylist() == ["", ""]
    assert file_location("/t a/b", "partition=0/x.parquet") == "/t a/b/partition=0/x.parquet"
    assert (
        file_location("s3://bkt/t/", "partition=0/x.parquet") == "s3://bkt/t/partition=0/x.parquet"
    )
    assert file_location("/t", "/abs/x.parquet") == "/abs/x.parquet"
