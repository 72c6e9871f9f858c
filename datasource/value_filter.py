"""Pushed-down conditions on a typed read's value columns, checked against Parquet statistics.

A typed lake file holds the value's fields as columns, and its row groups carry each column's
minimum and maximum: a condition such as ``qty > 100`` or ``address.city = 'Paris'`` rules out
every row group whose range cannot hold a match, so those rows are never decoded. Only a
comparison of like with like rules anything out; a statistic that is missing or does not
compare with the literal keeps the row group (it is read, and Spark filters its rows).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

Bound = int | float | Decimal | str | dt.date
"""A literal that can be compared with a column's statistics."""


@dataclass(frozen=True)
class ValueCondition:
    """``column`` (its Parquet path: ``qty``, ``address.zip``) is above ``lo`` and below
    ``hi`` (``strict``: not equal to them), or one of ``values``."""

    column: str
    lo: Bound | None = None
    lo_strict: bool = False
    hi: Bound | None = None
    hi_strict: bool = False
    values: tuple[Bound, ...] | None = None

    def may_match(self, low: object, high: object) -> bool:
        """Whether a row group whose column ranges over ``[low, high]`` can hold a match."""
        if low is None or high is None:
            return True
        try:
            if self.values is not None:
                return any(_le(low, v) and _le(v, high) for v in self.values)
            if self.lo is not None and not (
                _lt(self.lo, high) if self.lo_strict else _le(self.lo, high)
            ):
                return False
            return self.hi is None or (_lt(low, self.hi) if self.hi_strict else _le(low, self.hi))
        except TypeError:
            return True  # a statistic that does not compare with the literal rules nothing out


def comparable(value: object) -> Bound | None:
    """``value`` as a literal statistics compare with (None: one they do not)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, dt.datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
    if isinstance(value, int | float | Decimal | str | dt.date):
        return value
    return None


def _le(a: object, b: object) -> bool:
    return bool(_aware(a) <= _aware(b))  # type: ignore[operator]


def _lt(a: object, b: object) -> bool:
    return bool(_aware(a) < _aware(b))  # type: ignore[operator]


def _aware(value: object) -> object:
    """A statistic's naive datetime (Parquet's UTC-adjusted timestamps) made aware."""
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value
