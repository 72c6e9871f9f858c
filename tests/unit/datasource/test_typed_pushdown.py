"""Filters on a typed read's value columns: conditions on Parquet statistics that skip the
row groups (and so the files) that cannot hold a match, and never one that can."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.datasource import (
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    LessThan,
    LessThanOrEqual,
)

from datasource.pushdown import pruning_from_filters, value_condition
from datasource.value_filter import ValueCondition
from spark_log.lake.range_read import row_groups

UTC = dt.UTC


def test_comparisons_become_conditions_on_the_column_path():
    assert value_condition(EqualTo(("qty",), 3)) == ValueCondition("qty", values=(3,))
    assert value_condition(GreaterThan(("address", "zip"), 7)) == ValueCondition(
        "address.zip", lo=7, lo_strict=True
    )
    assert value_condition(LessThanOrEqual(("Price",), 2.5)) == ValueCondition("Price", hi=2.5)
    assert value_condition(In(("city",), ["a", "b"])) == ValueCondition("city", values=("a", "b"))


def test_what_statistics_cannot_check_is_no_condition():
    assert value_condition(EqualTo(("ok",), True)) is None  # booleans prune too little
    assert value_condition(EqualTo(("blob",), b"x")) is None
    assert value_condition(In(("qty",), [1, None])) is None
    assert value_condition(IsNotNull(("qty",))) is None


def test_the_lake_columns_keep_their_own_pruning():
    pruning = pruning_from_filters([GreaterThanOrEqual(("offset",), 5), LessThan(("qty",), 3)])
    assert pruning.offset_lo == 5
    assert pruning.rows.values == (ValueCondition("qty", hi=3, hi_strict=True),)


def test_a_condition_rules_out_only_ranges_that_cannot_match():
    above = ValueCondition("qty", lo=10, lo_strict=True)
    assert not above.may_match(1, 10) and above.may_match(1, 11)
    at_least = ValueCondition("qty", lo=10)
    assert at_least.may_match(1, 10)
    below = ValueCondition("qty", hi=Decimal("2.5"), hi_strict=True)
    assert not below.may_match(Decimal("2.5"), Decimal(9)) and below.may_match(2.4, 9)
    one_of = ValueCondition("city", values=("b", "z"))
    assert one_of.may_match("a", "c") and not one_of.may_match("c", "y")
    assert one_of.may_match(None, None)  # no statistics: read


def test_mismatched_types_and_naive_statistics():
    when = dt.datetime(2024, 1, 2, tzinfo=UTC)
    later = ValueCondition("at", lo=when, lo_strict=True)
    assert not later.may_match(dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 2))  # naive: UTC
    assert later.may_match(dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 3))
    assert ValueCondition("qty", lo="x").may_match(1, 2)  # text against numbers: kept
    assert ValueCondition("day", values=(dt.date(2024, 1, 5),)).may_match(
        dt.date(2024, 1, 1), dt.date(2024, 1, 9)
    )


def test_row_groups_outside_a_nested_condition_are_skipped(tmp_path: Path):
    path = tmp_path / "typed.parquet"
    table = pa.table(
        {
            "offset": pa.array(range(6), pa.int64()),
            "address": [{"zip": z, "city": "c"} for z in (1, 2, 3, 10, 11, 12)],
            "qty": pa.array([5, 6, 7, 50, 60, 70], pa.int64()),
        }
    )
    pq.write_table(table, path, row_group_size=3)
    metadata = pq.ParquetFile(path).metadata
    nested = pruning_from_filters([GreaterThanOrEqual(("address", "zip"), 10)]).rows
    assert row_groups(metadata, 0, 6, nested) == ([1], [])
    top = pruning_from_filters([LessThan(("qty",), 7)]).rows
    assert row_groups(metadata, 0, 6, top) == ([0], [])
    nothing = pruning_from_filters([GreaterThan(("qty",), 70)]).rows
    assert row_groups(metadata, 0, 6, nothing) == ([], [])
    assert row_groups(metadata, 0, 6, pruning_from_filters([]).rows) == ([0, 1], [])
