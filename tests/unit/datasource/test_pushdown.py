"""Filters Spark pushes turned into pruning: only ever conservative."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
from pyspark.sql.datasource import (
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    LessThan,
    LessThanOrEqual,
    StringStartsWith,
)

from datasource.pushdown import pruning_from_filters
from datasource.row_filter import RowFilter


def test_partition_and_offset_ranges():
    pruning = pruning_from_filters(
        [
            IsNotNull(("partition",)),
            In(("partition",), [0, 2, 5]),
            LessThanOrEqual(("partition",), 2),
            GreaterThanOrEqual(("offset",), 10),
            LessThan(("offset",), 20),
        ]
    )
    assert [p for p in range(6) if pruning.allows_partition(p)] == [0, 2]
    assert pruning.clamp(0, 100) == (10, 20)
    assert pruning.clamp(15, 18) == (15, 18)


def test_offset_equality_and_in_become_bounds():
    assert pruning_from_filters([EqualTo(("offset",), 7)]).clamp(0, 100) == (7, 8)
    assert pruning_from_filters([In(("offset",), [9, 3])]).clamp(0, 100) == (3, 10)
    empty = pruning_from_filters([EqualTo(("offset",), 7), EqualTo(("offset",), 8)])
    start, end = empty.clamp(0, 100)
    assert start == end


def test_timestamps_and_keys_become_row_conditions():
    t = dt.datetime(2026, 1, 2, 3, 4, 5, 600, tzinfo=dt.UTC)
    pruning = pruning_from_filters(
        [
            GreaterThan(("timestamp",), t),
            EqualTo(("key",), b"k1"),
            StringStartsWith(("subject",), "a"),
        ]
    )
    micros = int(t.timestamp() * 1_000_000)
    assert pruning.rows == RowFilter(micros + 1, None, frozenset({b"k1"}))
    assert pruning.clamp(0, 10) == (0, 10)  # nothing said about offsets


def test_row_filter_applies_and_prunes_files():
    rows = RowFilter(min_timestamp_us=2000, keys=frozenset({b"a"}))
    batch = pa.RecordBatch.from_pydict(
        {
            "timestamp": pa.array([1000, 2000, 3000], pa.timestamp("us", tz="UTC")),
            "key": pa.array([b"a", b"a", None]),
        }
    )
    assert rows.apply(batch).column("timestamp").to_pylist()[0].microsecond == 2000
    assert rows.apply(batch).num_rows == 1
    assert not rows.may_match_file(0, 1999)
    assert rows.may_match_file(0, 2000) and rows.may_match_file(None, None)
    assert RowFilter().empty and RowFilter().apply(batch) is batch
