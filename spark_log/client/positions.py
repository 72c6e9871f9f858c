"""Where a subscription starts and where it stops (Liftbridge's start and stop positions).

Starts: ``"earliest"`` (the first offset readable, in the lake or the log), ``"latest"``
(the last committed record, inclusive; on an empty partition the same as ``"new-only"``),
``"new-only"`` (only records committed after subscribing: the high watermark), an offset, a
``datetime`` (the first record at or after it), or a ``Cursor`` (the record after the
cursor's offset). Stops: an offset (inclusive), ``"latest"`` (the last record committed when
the subscription starts: it ends even while more are published), or a ``datetime`` (it ends
before the first record stamped after it). Checked here, before any request, so a mistake is
an ``InvalidRequestError`` that names it rather than a 422 from a node.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal

from spark_log.errors import InvalidRequestError

StartName = Literal["earliest", "latest", "new-only"]
START_NAMES: tuple[StartName, ...] = ("earliest", "latest", "new-only")


@dataclass(frozen=True, slots=True)
class Cursor:
    """Start after a cursor's offset (the last record its consumer processed): resume where
    ``set_cursor`` left off. ``if_unset``: where to start when the cursor was never set (None:
    CursorNotFoundError instead)."""

    cursor_id: str
    if_unset: StartName | None = "earliest"


Start = StartName | int | dt.datetime | Cursor
"""A subscription's start: a name from ``START_NAMES``, an offset, a time or a cursor."""
Stop = Literal["latest"] | int | dt.datetime
"""A subscription's stop: ``"latest"``, an offset (inclusive) or a time."""
STOP_LATEST: Literal["latest"] = "latest"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MS = dt.timedelta(milliseconds=1)


@dataclass(frozen=True, slots=True)
class StopBounds:
    """A stop as the fetches apply it: ``end`` the first offset not to read (exclusive; None:
    no offset bound), ``timestamp_ms`` the last timestamp a record may carry (None: none)."""

    end: int | None = None
    timestamp_ms: int | None = None


def check_start(start: object) -> Start:
    """``start`` if it is a valid start, else InvalidRequestError saying what is accepted."""
    if isinstance(start, bool):  # an int subclass, never meant as an offset
        raise InvalidRequestError(f"invalid start {start!r}")
    if isinstance(start, int):
        if start < 0:
            raise InvalidRequestError(f"a start offset must be >= 0, got {start}")
        return start
    if isinstance(start, dt.datetime):
        return start
    if isinstance(start, Cursor):
        if start.if_unset is not None and start.if_unset not in START_NAMES:
            raise InvalidRequestError(f"invalid if_unset {start.if_unset!r} of {start!r}")
        return start
    if isinstance(start, str) and start in START_NAMES:
        return start
    raise InvalidRequestError(
        f"start must be {', '.join(repr(n) for n in START_NAMES)}, an offset, a datetime or a "
        "Cursor; "
        f"got {start!r}"
    )


def check_stop(stop: object) -> Stop | None:
    """``stop`` if it is a valid stop (or None), else InvalidRequestError."""
    if stop is None or isinstance(stop, dt.datetime) or stop == STOP_LATEST:
        return stop
    if isinstance(stop, int) and not isinstance(stop, bool):
        if stop < 0:
            raise InvalidRequestError(f"a stop offset must be >= 0, got {stop}")
        return stop
    raise InvalidRequestError(f"stop must be 'latest', an offset or a datetime; got {stop!r}")


def check_order(start: Start, stop: Stop | None) -> None:
    """Two explicit offsets the wrong way round are a mistake, not an empty subscription."""
    if isinstance(start, int) and isinstance(stop, int) and stop < start:
        raise InvalidRequestError(f"stop offset {stop} is before start offset {start}")


def start_timestamp_ms(when: dt.datetime) -> int:
    """The first whole millisecond (the unit of record timestamps) at or after ``when``:
    exact integer arithmetic, since float seconds can land a millisecond short."""
    return -(-_since_epoch(when) // _MS)


def stop_timestamp_ms(when: dt.datetime) -> int:
    """The last whole millisecond at or before ``when`` (a record stamped then is kept)."""
    return _since_epoch(when) // _MS


def _since_epoch(when: dt.datetime) -> dt.timedelta:
    # a naive datetime is local time, as ``datetime.timestamp`` reads it
    return when.astimezone(dt.UTC) - _EPOCH


def stop_bounds(stop: Stop | None, high_watermark: int | None) -> StopBounds:
    """The bounds ``stop`` sets; ``high_watermark`` (read when the subscription starts) is
    only needed for ``"latest"``."""
    if stop is None:
        return StopBounds()
    if isinstance(stop, dt.datetime):
        return StopBounds(timestamp_ms=stop_timestamp_ms(stop))
    if isinstance(stop, int):
        return StopBounds(end=stop + 1)
    if high_watermark is None:
        raise InvalidRequestError("stop='latest' needs the high watermark at subscribe time")
    return StopBounds(end=high_watermark)


def earlier_end(a: int | None, b: int | None) -> int | None:
    """The first of two exclusive end offsets (None: unbounded)."""
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)
