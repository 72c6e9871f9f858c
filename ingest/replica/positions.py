"""Start and stop positions of a consumer fetch (Liftbridge's StartPosition/StopPosition).

A REST fetch is stateless, so a subscription's positions are resolved here on each request:
a named start (``earliest``, ``latest``, ``new-only``) becomes an offset against the log as it
is now, and a stop (an inclusive offset, or a timestamp the records may not pass) trims the
answer and says when it was reached (``end_reached``), so any HTTP consumer knows to finish
without keeping state of its own. A stop at "the last record committed when subscribing"
needs that state: a consumer reads ``high_watermark`` from its first answer and sends
``stop_offset`` = that - 1 from then on (the Python client does so for ``stop="latest"``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from spark_log.client.positions import START_NAMES
from spark_log.errors import InvalidRequestError

if TYPE_CHECKING:
    from ingest.replica.read_path import FetchResult
    from spark_log.log import PartitionLog, Record

START_PATTERN = "^(" + "|".join(START_NAMES) + ")$"


class FetchSource(Protocol):
    """What a positioned fetch reads from: a partition replica, or the lake tier in front of
    one (``ingest.replica.tiered_fetch``)."""

    @property
    def log(self) -> PartitionLog: ...

    async def fetch(
        self, offset: int, max_records: int, max_bytes: int, wait_ms: int, *, arrow: bool = False
    ) -> FetchResult: ...


@dataclass(frozen=True, slots=True)
class Stop:
    """Where a fetch must not read past: ``offset`` inclusive, ``timestamp_ms`` the last
    timestamp a returned record may carry (None: no such bound)."""

    offset: int | None = None
    timestamp_ms: int | None = None

    def passed(self, offset: int) -> bool:
        """Whether a read starting at ``offset`` is already past the stop offset."""
        return self.offset is not None and offset > self.offset

    def limit(self, offset: int, max_records: int) -> int:
        """Records a read from ``offset`` may return without passing the stop offset."""
        if self.offset is None:
            return max_records
        return max(1, min(max_records, self.offset - offset + 1))


def check_start_choice(
    offset: int | None, timestamp: int | None, start: str | None, cursor: str | None = None
) -> None:
    """A fetch starts at one position: refuse more than one, naming them (a ``start`` given
    with a ``cursor`` is the cursor's fallback and passed here as None)."""
    candidates = (("offset", offset), ("timestamp", timestamp), ("start", start))
    given = [name for name, value in (*candidates, ("cursor", cursor)) if value is not None]
    if len(given) > 1:
        raise InvalidRequestError(
            f"give one of offset, timestamp, start or cursor; got {', '.join(given)}"
        )


def named_start_offset(log_: PartitionLog, start: str) -> int:
    """The offset a named start means now: ``earliest`` the log start, ``latest`` the last
    committed record (HW - 1; the HW on an empty partition, so it behaves like ``new-only``),
    ``new-only`` the HW (only records committed from now on)."""
    hw = log_.high_watermark
    if start == "earliest":
        return log_.log_start_offset
    if start == "latest":
        return hw - 1 if hw > log_.log_start_offset else hw
    if start == "new-only":
        return hw
    raise InvalidRequestError(f"start must be one of {', '.join(START_NAMES)}; got {start!r}")


def cut_records(records: list[Record], stop: Stop) -> tuple[list[Record], bool]:
    """``records`` before the first one stamped after the stop timestamp, and whether one was
    (the stop is reached then)."""
    if stop.timestamp_ms is None:
        return records, False
    for i, record in enumerate(records):
        if record.timestamp > stop.timestamp_ms:
            return records[:i], True
    return records, False


def cut_table(table: pa.Table | None, stop: Stop) -> tuple[pa.Table | None, bool]:
    """The Arrow form of ``cut_records`` (FETCH_SCHEMA rows), vectorised."""
    if stop.timestamp_ms is None or table is None or table.num_rows == 0:
        return table, False
    after = pc.greater(table.column("timestamp").cast(pa.int64()), stop.timestamp_ms)
    first = pc.index(after, True).as_py()
    if first < 0:
        return table, False
    return table.slice(0, first), True


def end_reached(next_offset: int, stop: Stop, cut: bool) -> bool:
    """Whether the subscription this fetch belongs to is over: the answer was cut at the stop
    timestamp, or the next read would pass the stop offset."""
    return cut or stop.passed(next_offset)


@dataclass(frozen=True, slots=True)
class FetchLimits:
    """One fetch's bounds, already capped by the node's own limits."""

    max_records: int
    max_bytes: int
    wait_ms: int


@dataclass(frozen=True, slots=True)
class PositionedFetch:
    """A fetch answer trimmed to its stop: ``records`` (JSON) or ``table`` (Arrow)."""

    records: list[Record]
    table: pa.Table | None
    high_watermark: int
    log_start_offset: int
    next_offset: int
    end_reached: bool

    def headers(self) -> dict[str, str]:
        """What an Arrow consumer, which has no JSON envelope, needs to go on or finish."""
        return {
            "Liftlog-High-Watermark": str(self.high_watermark),
            "Liftlog-Next-Offset": str(self.next_offset),
            "Liftlog-End-Reached": "true" if self.end_reached else "false",
        }


async def fetch_until_stop(
    replica: FetchSource, offset: int, stop: Stop, limits: FetchLimits, *, arrow: bool
) -> PositionedFetch:
    """Committed records from ``offset`` up to ``stop``; a read already past the stop offset
    answers at once (no long-poll: nothing it could wait for may be returned).

    ``next_offset`` is the read's own when it has one and no stop cut it (a lake range of a
    compacted lake may hold fewer rows than it spans, or none), else the last record + 1."""
    if stop.passed(offset):
        log_ = replica.log
        return PositionedFetch([], None, log_.high_watermark, log_.log_start_offset, offset, True)
    result = await replica.fetch(
        offset,
        stop.limit(offset, limits.max_records),
        limits.max_bytes,
        limits.wait_ms,
        arrow=arrow,
    )
    if arrow:
        table, cut = cut_table(result.table, stop)
        records: list[Record] = []
        last = _last_offset(table)
    else:
        records, cut = cut_records(result.records, stop)
        table = None
        last = records[-1].offset if records else None
    next_offset = _next_offset(offset, last, result.next_offset, cut)
    return PositionedFetch(
        records,
        table,
        result.high_watermark,
        result.log_start_offset,
        next_offset,
        end_reached(next_offset, stop, cut),
    )


def _next_offset(offset: int, last: int | None, read_next: int | None, cut: bool) -> int:
    if read_next is not None and not cut:
        return read_next
    return offset if last is None else last + 1


def _last_offset(table: pa.Table | None) -> int | None:
    if table is None or table.num_rows == 0:
        return None
    last: int = table.column("offset")[table.num_rows - 1].as_py()
    return last
