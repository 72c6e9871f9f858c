"""Which segments retention deletes: the pure rule against a brute-force model."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_log.errors import InvalidRequestError
from spark_log.log.retention import RetentionLimits, SegmentStats, count_deletable


def model(segments, limits, now, hw, max_deletable):
    """Largest k such that deleting the first k segments is wanted by some limit and allowed."""
    best = 0
    for k in range(1, len(segments)):
        gone = segments[:k]
        allowed = all(s.next_offset <= hw for s in gone) and (
            max_deletable is None or all(s.next_offset <= max_deletable for s in gone)
        )
        by_age = limits.retention_ms is not None and all(
            now - s.max_timestamp_ms > limits.retention_ms for s in gone
        )
        by_bytes = limits.retention_bytes is not None and all(
            sum(x.size_bytes for x in segments[i + 1 :]) >= limits.retention_bytes for i in range(k)
        )
        by_messages = limits.retention_messages is not None and (
            segments[-1].next_offset - gone[-1].next_offset >= limits.retention_messages
        )
        if not allowed:
            break
        if by_age or by_bytes or by_messages:
            best = k
    return best


@st.composite
def logs(draw: st.DrawFn) -> list[SegmentStats]:
    n = draw(st.integers(1, 7))
    segments, offset = [], draw(st.integers(0, 100))
    for _ in range(n):
        count = draw(st.integers(1, 50))
        segments.append(
            SegmentStats(
                offset, offset + count, draw(st.integers(1, 500)), draw(st.integers(0, 1000))
            )
        )
        offset += count
    return segments


@given(
    logs(),
    st.none() | st.integers(0, 1000),
    st.none() | st.integers(0, 3000),
    st.none() | st.integers(0, 400),
    st.integers(0, 1000),
    st.integers(0, 500),
    st.none() | st.integers(0, 500),
)
@settings(max_examples=300, deadline=None)
def test_count_deletable_matches_model(segments, ms, size, messages, now, hw, max_deletable):
    limits = RetentionLimits(ms, size, messages)
    got = count_deletable(
        segments, limits, now_ms=now, high_watermark=hw, max_deletable_offset=max_deletable
    )
    assert got == model(segments, limits, now, hw, max_deletable)
    assert got < len(segments)  # never the active segment


def test_negative_limits_are_invalid():
    with pytest.raises(InvalidRequestError):
        RetentionLimits(retention_bytes=-1)
