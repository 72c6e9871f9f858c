"""``liftlog tail --from`` and ``--until`` as a user types them."""

from __future__ import annotations

import datetime as dt

import pytest

from liftlog.cli.tail import follows, parse_start, parse_stop
from spark_log.errors import InvalidRequestError

NOON = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("text", "start"),
    [
        ("earliest", "earliest"),
        ("latest", "latest"),
        ("new-only", "new-only"),
        ("17", 17),
        ("2026-11-25T12:00:00", NOON),  # no zone: UTC
        ("2026-11-25T13:00:00+01:00", NOON),
    ],
)
def test_from_takes_names_offsets_and_times(text, start):
    assert parse_start(text) == start


@pytest.mark.parametrize(
    ("text", "stop"), [("latest", "latest"), ("9", 9), ("2026-11-25T12:00", NOON)]
)
def test_until_takes_latest_offsets_and_times(text, stop):
    assert parse_stop(text) == stop


@pytest.mark.parametrize("text", ["newest", "-3", "yesterday"])
def test_from_refuses_anything_else(text):
    with pytest.raises(InvalidRequestError, match="--from wants earliest, latest, new-only"):
        parse_start(text)


@pytest.mark.parametrize("text", ["earliest", "new-only", "soon"])
def test_until_refuses_anything_else(text):
    with pytest.raises(InvalidRequestError, match="--until wants latest"):
        parse_stop(text)


def test_a_stop_ahead_makes_tail_wait_for_it():
    assert follows(False, None) is False  # catch up and end
    assert follows(True, None) is True  # -f: forever
    assert follows(False, 9) is True and follows(False, NOON) is True
    assert follows(True, "latest") is False  # the end of the catch-up is the stop
