"""Which old segments retention may delete (Kafka's ``deletableSegments``), as a pure function.

Only whole sealed segments go, oldest first, so the log start always lands on a segment base
and no batch is ever split. Each limit (age, bytes, messages) selects a prefix; the union of
those prefixes is then capped by what must be kept whatever the limits say: the active
segment, anything not yet committed (at or above the high watermark) and anything the lake
does not hold yet (at or above ``max_deletable_offset``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from spark_log.errors import InvalidRequestError


@dataclass(frozen=True, slots=True)
class SegmentStats:
    base_offset: int
    next_offset: int
    size_bytes: int
    max_timestamp_ms: int


@dataclass(frozen=True, slots=True)
class RetentionLimits:
    """``None`` disables a limit."""

    retention_ms: int | None = None
    retention_bytes: int | None = None
    retention_messages: int | None = None

    def __post_init__(self) -> None:
        for name in ("retention_ms", "retention_bytes", "retention_messages"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise InvalidRequestError(f"{name} must be >= 0 or None, got {value}")


def count_deletable(
    segments: Sequence[SegmentStats],
    limits: RetentionLimits,
    *,
    now_ms: int,
    high_watermark: int,
    max_deletable_offset: int | None,
) -> int:
    """How many leading segments to delete."""
    sealed = segments[:-1]
    wanted = max(
        _by_age(sealed, limits.retention_ms, now_ms),
        _by_bytes(segments, limits.retention_bytes),
        _by_messages(segments, limits.retention_messages),
    )
    return min(wanted, _deletable_bound(sealed, high_watermark, max_deletable_offset))


def _deletable_bound(
    sealed: Sequence[SegmentStats], high_watermark: int, max_deletable_offset: int | None
) -> int:
    limit = (
        high_watermark
        if max_deletable_offset is None
        else min(high_watermark, max_deletable_offset)
    )
    return _prefix(sealed, lambda s: s.next_offset <= limit)


def _by_age(sealed: Sequence[SegmentStats], retention_ms: int | None, now_ms: int) -> int:
    if retention_ms is None:
        return 0
    return _prefix(sealed, lambda s: now_ms - s.max_timestamp_ms > retention_ms)


def _by_bytes(segments: Sequence[SegmentStats], retention_bytes: int | None) -> int:
    """Delete while what remains would still be at least ``retention_bytes`` (as Kafka does)."""
    if retention_bytes is None:
        return 0
    remaining = sum(s.size_bytes for s in segments)
    count = 0
    for segment in segments[:-1]:
        if remaining - segment.size_bytes < retention_bytes:
            break
        remaining -= segment.size_bytes
        count += 1
    return count


def _by_messages(segments: Sequence[SegmentStats], retention_messages: int | None) -> int:
    """Delete while the records after the segment would still be at least the limit."""
    if retention_messages is None or not segments:
        return 0
    log_end_offset = segments[-1].next_offset
    return _prefix(segments[:-1], lambda s: log_end_offset - s.next_offset >= retention_messages)


def _prefix(segments: Sequence[SegmentStats], keep_going: Callable[[SegmentStats], bool]) -> int:
    """Length of the leading run of ``segments`` for which ``keep_going`` holds."""
    count = 0
    for segment in segments:
        if not keep_going(segment):
            break
        count += 1
    return count
