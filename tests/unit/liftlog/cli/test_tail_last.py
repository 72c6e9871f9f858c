"""``liftlog tail -n N``: where each partition's last N records begin, and the counts the
command line takes."""

from __future__ import annotations

import argparse
import datetime as dt

import pytest

from liftlog.cli.tail_last import last_start, record_count
from spark_log.client.positions import Stop

NOON = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("offset", "end", "stop", "last", "first"),
    [
        (0, 100, None, 5, 95),  # the last 5 before the HW
        (0, 3, None, 5, 0),  # fewer than 5: from the start
        (98, 100, None, 5, 98),  # never before --from
        (0, 100, None, 0, 100),  # -n 0: nothing, then -f follows from the HW
        (0, 100, "latest", 5, 95),  # --until latest is the HW
        (0, 100, 49, 5, 45),  # --until 49: the last 5 up to offset 49
        (0, 100, 500, 5, 95),  # a stop beyond the HW: the HW
        (10, 100, NOON, 5, 10),  # a time stop is found only by reading
    ],
)
def test_last_start(offset: int, end: int, stop: Stop | None, last: int, first: int) -> None:
    assert last_start(offset, end, stop, last) == first


@pytest.mark.parametrize(("text", "count"), [("0", 0), ("7", 7)])
def test_record_counts(text: str, count: int) -> None:
    assert record_count(text) == count


@pytest.mark.parametrize("text", ["-1", "five", ""])
def test_a_count_must_be_a_number_of_zero_or_more(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        record_count(text)
