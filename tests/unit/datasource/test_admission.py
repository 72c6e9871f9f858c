"""Admission control, Kafka's arithmetic: a proportional cap, a minimum with a maximum delay."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from datasource.admission import cap_offsets, should_wait


def test_no_cap_reads_everything_available():
    assert cap_offsets({0: 5, 1: 0}, {0: 10, 1: 3, 2: 4}, None) == {0: 10, 1: 3, 2: 4}


def test_cap_is_shared_by_backlog_and_small_partitions_still_move():
    end = cap_offsets({0: 0, 1: 0, 2: 0}, {0: 400, 1: 200, 2: 1}, 200)
    assert end == {0: 133, 1: 66, 2: 1}  # 133.1 floored, 66.6 floored, 0.33 rounded up


@given(
    start=st.lists(st.integers(0, 1000), min_size=1, max_size=6),
    extra=st.lists(st.integers(0, 1000), min_size=6, max_size=6),
    cap=st.integers(1, 3000),
)
def test_cap_never_passes_available_nor_goes_back(start, extra, cap):
    begin = dict(enumerate(start))
    available = {p: s + extra[p] for p, s in begin.items()}
    end = cap_offsets(begin, available, cap)
    for p in begin:
        assert begin[p] <= end[p] <= available[p]
    taken = sum(end[p] - begin[p] for p in begin)
    assert taken <= cap + len(begin)  # rounding up a tiny share adds at most one per partition


def test_minimum_waits_until_the_delay_has_passed():
    assert should_wait(pending=5, min_records=10, since_last_trigger_s=1, max_delay_s=3)
    assert not should_wait(pending=5, min_records=10, since_last_trigger_s=3, max_delay_s=3)
    assert not should_wait(pending=10, min_records=10, since_last_trigger_s=0, max_delay_s=3)
    assert not should_wait(pending=0, min_records=None, since_last_trigger_s=0, max_delay_s=3)
