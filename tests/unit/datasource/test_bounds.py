"""What a partition holds across lake and log, and when a range is data loss."""

from __future__ import annotations

import pytest

from datasource.bounds import PartitionBounds, check_range, readable_segments
from datasource.errors import DataLossError, InvalidOptionError
from datasource.offsets import EARLIEST, LATEST
from datasource.splitting import Segment


def bounds(log_start: int, hw: int, lake_offset: int = 0, lake_first: int | None = None):
    return PartitionBounds(0, log_start, hw, lake_offset, lake_first)


def test_earliest_and_latest():
    assert bounds(0, 50).resolve(EARLIEST) == 0
    assert bounds(30, 50).resolve(EARLIEST) == 30  # no lake: the log start
    assert bounds(30, 50, lake_offset=40, lake_first=7).resolve(EARLIEST) == 7
    assert bounds(30, 50).resolve(LATEST) == 50
    assert bounds(30, 50).resolve(12) == 12


def test_the_only_hole_is_between_lake_offset_and_log_start():
    assert bounds(0, 50).hole is None
    assert bounds(30, 50).hole == (0, 30)
    assert bounds(30, 50, lake_offset=40).hole is None
    assert bounds(30, 50, lake_offset=20).hole == (20, 30)


def test_crossing_the_hole_fails_or_skips():
    b = bounds(30, 50, lake_offset=20)
    assert readable_segments("s", b, 0, 20, True) == [Segment(0, 0, 20)]
    assert readable_segments("s", b, 30, 50, True) == [Segment(0, 30, 50)]
    with pytest.raises(DataLossError, match=r"offsets \[20, 30\)"):
        readable_segments("s", b, 10, 40, True)
    assert readable_segments("s", b, 10, 40, False) == [Segment(0, 10, 20), Segment(0, 30, 40)]
    assert readable_segments("s", b, 22, 25, False) == []


def test_explicit_offsets_are_checked_like_kafka():
    check_range("s", bounds(0, 50), 10, 50)
    with pytest.raises(InvalidOptionError, match="beyond its high watermark"):
        check_range("s", bounds(0, 50), 0, 51)
    with pytest.raises(InvalidOptionError, match="after its ending offset"):
        check_range("s", bounds(0, 50), 40, 30)
