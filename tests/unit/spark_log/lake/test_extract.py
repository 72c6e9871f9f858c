"""Log ranges as lake rows: offsets, values, keys, headers, subjects and UTC timestamps exact,
ranges cut mid-batch, and the record and byte caps that bound one export."""

from __future__ import annotations

import datetime as dt

import pytest

from spark_log.lake import LAKE_SCHEMA, read_range
from spark_log.log import PartitionLog
from tests.unit.spark_log.log.conftest import BASE_TS, make_batch, tiny_config, value_of


@pytest.fixture
def log(tmp_path):
    log = PartitionLog.open(tmp_path / "p", tiny_config())
    for _ in range(10):  # 30 records in batches of 3, several segments
        log.append(make_batch(log.log_end_offset, 3))
    log.set_high_watermark(log.log_end_offset)
    yield log
    log.close()


def test_a_range_becomes_lake_rows_with_exact_columns(log):
    chunk = read_range(log, 7, 0, 30, max_records=1000, max_bytes=1 << 30)
    assert (chunk.start_offset, chunk.end_offset, chunk.records) == (0, 30, 30)
    assert chunk.table.schema == LAKE_SCHEMA
    rows = chunk.table.to_pylist()
    assert [r["offset"] for r in rows] == list(range(30))
    assert {r["partition"] for r in rows} == {7}
    for r in rows:
        o = r["offset"]
        assert r["value"] == value_of(o)
        assert r["key"] == (b"k%d" % o if o % 3 else None)
        assert r["headers"] == ([{"key": "n", "value": str(o).encode()}] if o % 2 else None)
        assert r["subject"] == f"subj.{o % 4}"
        expected_ts = dt.datetime.fromtimestamp((BASE_TS + o % 3) / 1000, dt.UTC)
        assert r["timestamp"] == expected_ts


def test_a_range_may_start_and_end_inside_batches(log):
    chunk = read_range(log, 0, 4, 11, max_records=1000, max_bytes=1 << 30)
    assert chunk.table.column("offset").to_pylist() == list(range(4, 11))
    assert chunk.table.column("value").to_pylist() == [value_of(o) for o in range(4, 11)]


def test_the_record_cap_bounds_a_range(log):
    chunk = read_range(log, 0, 2, 30, max_records=5, max_bytes=1 << 30)
    assert (chunk.start_offset, chunk.end_offset) == (2, 7)


def test_the_byte_cap_still_takes_one_batch(log):
    chunk = read_range(log, 0, 0, 30, max_records=1000, max_bytes=1)
    assert (chunk.start_offset, chunk.end_offset) == (0, 3)


def test_an_empty_range_is_empty(log):
    chunk = read_range(log, 0, 30, 30, max_records=1000, max_bytes=1 << 30)
    assert chunk.records == 0 and chunk.table.num_rows == 0
