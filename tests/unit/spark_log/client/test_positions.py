"""Subscription positions are checked before any request: a mistake names what is accepted."""

from __future__ import annotations

import datetime as dt

import pytest

from spark_log.client.positions import (
    StopBounds,
    check_order,
    check_start,
    check_stop,
    earlier_end,
    start_timestamp_ms,
    stop_bounds,
    stop_timestamp_ms,
)
from spark_log.errors import InvalidRequestError

WHEN = dt.datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=dt.UTC)
WHEN_MS = 1767323045678


@pytest.mark.parametrize("start", ["earliest", "latest", "new-only", 0, 42, WHEN])
def test_valid_starts_pass(start):
    assert check_start(start) == start


@pytest.mark.parametrize("start", ["newest", "LATEST", "", -1, True, 1.5, None])
def test_invalid_starts_are_refused_naming_the_choices(start):
    with pytest.raises(InvalidRequestError, match="start"):
        check_start(start)


@pytest.mark.parametrize("stop", [None, "latest", 0, 7, WHEN])
def test_valid_stops_pass(stop):
    assert check_stop(stop) == stop


@pytest.mark.parametrize("stop", ["earliest", "new-only", -1, False, 2.0])
def test_invalid_stops_are_refused(stop):
    with pytest.raises(InvalidRequestError, match="stop"):
        check_stop(stop)


def test_offsets_the_wrong_way_round_are_a_mistake():
    check_order(3, 3)
    check_order("latest", 0)  # resolved later: may simply be empty
    with pytest.raises(InvalidRequestError, match="stop offset 2 is before start offset 5"):
        check_order(5, 2)


def test_stops_become_fetch_bounds():
    assert stop_bounds(None, None) == StopBounds()
    assert stop_bounds(4, None) == StopBounds(end=5)  # inclusive
    assert stop_bounds("latest", 9) == StopBounds(end=9)  # the HW at subscribe time
    assert stop_bounds(WHEN, None) == StopBounds(timestamp_ms=WHEN_MS)
    with pytest.raises(InvalidRequestError):
        stop_bounds("latest", None)


def test_the_earlier_end_wins():
    assert earlier_end(None, None) is None
    assert earlier_end(3, None) == earlier_end(None, 3) == 3
    assert earlier_end(5, 3) == 3


def test_times_become_whole_milliseconds_exactly():
    assert start_timestamp_ms(WHEN) == stop_timestamp_ms(WHEN) == WHEN_MS
    between = WHEN + dt.timedelta(microseconds=400)
    assert start_timestamp_ms(between) == WHEN_MS + 1  # the first record at or after it
    assert stop_timestamp_ms(between) == WHEN_MS  # the last record not after it
    # float seconds would land a millisecond short of these
    for ms in (1764040000123, 1764040000999, 1700000000001):
        when = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
        assert start_timestamp_ms(when) == stop_timestamp_ms(when) == ms
