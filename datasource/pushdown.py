"""Pushed-down filters turned into what a read can skip: partitions, offsets, times, keys.

Spark 4.3 hands a Python source the simple conjuncts of a ``where``: comparisons, ``IN``,
``IS NOT NULL`` (``BETWEEN`` arrives as two comparisons, timestamps as aware datetimes, binary
literals as bytes, ``IN`` values as a list). Anything else is ignored here. The reader returns
every filter to Spark as well, so Spark still evaluates all of them: this only narrows what is
fetched, and a narrowing that is merely conservative can never change a result.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
)

from datasource.row_filter import RowFilter
from datasource.value_filter import ValueCondition, comparable

_MICROS = 1_000_000


@dataclass(frozen=True)
class Pruning:
    """The narrowing the filters allow (None where they say nothing; bounds inclusive)."""

    partitions: frozenset[int] | None = None
    partition_lo: int | None = None
    partition_hi: int | None = None
    offset_lo: int | None = None
    offset_hi: int | None = None
    rows: RowFilter = field(default_factory=RowFilter)

    def allows_partition(self, partition: int) -> bool:
        if self.partitions is not None and partition not in self.partitions:
            return False
        if self.partition_lo is not None and partition < self.partition_lo:
            return False
        return self.partition_hi is None or partition <= self.partition_hi

    def clamp(self, start: int, end: int) -> tuple[int, int]:
        """``[start, end)`` narrowed to the offset bounds (may become empty)."""
        if self.offset_lo is not None:
            start = max(start, self.offset_lo)
        if self.offset_hi is not None:
            end = min(end, self.offset_hi + 1)
        return start, max(start, end)


@dataclass
class _Bounds:
    """Inclusive integer bounds and an optional value set, for one column."""

    lo: int | None = None
    hi: int | None = None
    values: set[int] | None = None

    def lower(self, value: int) -> None:
        self.lo = value if self.lo is None else max(self.lo, value)

    def upper(self, value: int) -> None:
        self.hi = value if self.hi is None else min(self.hi, value)

    def only(self, values: set[int]) -> None:
        self.values = set(values) if self.values is None else self.values & set(values)


def pruning_from_filters(filters: list[Filter]) -> Pruning:
    """What ``filters`` (all AND-ed by Spark) let a read skip."""
    bounds: dict[str, _Bounds] = {name: _Bounds() for name in ("partition", "offset", "timestamp")}
    keys: set[bytes] | None = None
    conditions: list[ValueCondition] = []
    for flt in filters:
        column = _column(flt)
        if column == "key" and isinstance(flt, (EqualTo, In)):
            values = {flt.value} if isinstance(flt, EqualTo) else set(flt.value)
            found = {v for v in values if isinstance(v, bytes)}
            keys = found if keys is None else keys & found
        elif column in bounds:
            _narrow(bounds[column], flt, _timestamp_micros if column == "timestamp" else _integer)
        else:
            condition = value_condition(flt)
            if condition is not None:
                conditions.append(condition)
    return _pruning(bounds, keys, tuple(conditions))


def value_condition(flt: Filter) -> ValueCondition | None:
    """A comparison on any other column (a typed read's value field, maybe nested) as a
    condition on its Parquet statistics (None: one they cannot check)."""
    attribute = getattr(flt, "attribute", None)
    if not isinstance(attribute, tuple) or not attribute:
        return None
    path = ".".join(str(part) for part in attribute)
    if isinstance(flt, In):
        values = [comparable(v) for v in flt.value or []]
        known = tuple(v for v in values if v is not None)
        return ValueCondition(path, values=known) if len(known) == len(values) else None
    value = comparable(getattr(flt, "value", None))
    if value is None:
        return None
    if isinstance(flt, EqualTo):
        return ValueCondition(path, values=(value,))
    if isinstance(flt, GreaterThan | GreaterThanOrEqual):
        return ValueCondition(path, lo=value, lo_strict=isinstance(flt, GreaterThan))
    if isinstance(flt, LessThan | LessThanOrEqual):
        return ValueCondition(path, hi=value, hi_strict=isinstance(flt, LessThan))
    return None


def _pruning(
    bounds: dict[str, _Bounds], keys: set[bytes] | None, conditions: tuple[ValueCondition, ...]
) -> Pruning:
    part = bounds["partition"]
    offset_lo, offset_hi = _range(bounds["offset"])
    ts_lo, ts_hi = _range(bounds["timestamp"])
    rows = RowFilter(ts_lo, ts_hi, frozenset(keys) if keys is not None else None, conditions)
    values = frozenset(part.values) if part.values is not None else None
    return Pruning(values, part.lo, part.hi, offset_lo, offset_hi, rows)


def _range(bounds: _Bounds) -> tuple[int | None, int | None]:
    """Inclusive (lo, hi), a value set folded in as its smallest and largest value."""
    lo, hi = bounds.lo, bounds.hi
    if bounds.values is not None:
        if not bounds.values:
            return 0, -1  # contradictory filters: nothing matches
        lo = max(lo, min(bounds.values)) if lo is not None else min(bounds.values)
        hi = min(hi, max(bounds.values)) if hi is not None else max(bounds.values)
    return lo, hi


def _narrow(bounds: _Bounds, flt: Filter, convert: Callable[[object], int | None]) -> None:
    value = getattr(flt, "value", None)
    if isinstance(flt, In):
        converted = [convert(v) for v in value or []]
        numbers = {c for c in converted if c is not None}
        if None not in converted:  # every value converted
            bounds.only(numbers)
        return
    number = convert(value)
    if number is None:
        return
    if isinstance(flt, EqualTo):
        bounds.only({number})
    elif isinstance(flt, GreaterThan):
        bounds.lower(number + 1)
    elif isinstance(flt, GreaterThanOrEqual):
        bounds.lower(number)
    elif isinstance(flt, LessThan):
        bounds.upper(number - 1)
    elif isinstance(flt, LessThanOrEqual):
        bounds.upper(number)


def _column(flt: Filter) -> str | None:
    attribute = getattr(flt, "attribute", None)
    if isinstance(attribute, tuple) and len(attribute) == 1:
        return str(attribute[0]).lower()
    return None


def _integer(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def _timestamp_micros(value: object) -> int | None:
    """An aware datetime (how Spark sends TIMESTAMP literals) as µs since the epoch."""
    if not isinstance(value, dt.datetime):
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    delta = value - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return (delta.days * 86400 + delta.seconds) * _MICROS + delta.microseconds
