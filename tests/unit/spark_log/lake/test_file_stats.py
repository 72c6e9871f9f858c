"""Delta add-action statistics from a Parquet footer (what readers prune compacted files by)."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pyarrow.parquet as pq

from spark_log.lake.file_stats import parquet_stats_json
from spark_log.lake.layout import LAKE_SCHEMA


def test_stats_carry_records_offsets_rounded_timestamps_and_null_counts(tmp_path):
    schema = pa.schema([f for f in LAKE_SCHEMA if f.name != "partition"])
    stamps = [
        dt.datetime(2024, 1, 1, 0, 0, 0, 123456, tzinfo=dt.UTC),
        dt.datetime(2024, 1, 1, 0, 0, 1, 999500, tzinfo=dt.UTC),
    ]
    table = pa.table(
        {
            "offset": [5, 42],
            "timestamp": stamps,
            "key": [b"k", None],
            "value": [b"", b"v"],
            "headers": [None, None],
            "subject": ["a", "b"],
        },
        schema=schema,
    )
    path = tmp_path / "f.parquet"
    pq.write_table(table, path, row_group_size=1)
    stats = json.loads(parquet_stats_json(pq.ParquetFile(path).metadata))
    assert stats == {
        "numRecords": 2,
        "minValues": {"offset": 5, "timestamp": "2024-01-01T00:00:00.123Z"},
        "maxValues": {"offset": 42, "timestamp": "2024-01-01T00:00:02.000Z"},
        "nullCount": {"offset": 0, "timestamp": 0, "key": 1, "value": 0, "subject": 0},
    }


def test_an_empty_file_has_a_count_and_no_bounds(tmp_path):
    schema = pa.schema([f for f in LAKE_SCHEMA if f.name != "partition"])
    path = tmp_path / "empty.parquet"
    pq.write_table(schema.empty_table(), path)
    stats = json.loads(parquet_stats_json(pq.ParquetFile(path).metadata))
    assert stats["numRecords"] == 0 and stats["minValues"] == {} and stats["maxValues"] == {}
