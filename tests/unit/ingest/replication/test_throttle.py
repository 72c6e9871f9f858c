"""The reassignment throttle's token bucket, on a fake clock (no sleeps)."""

from __future__ import annotations

import pytest

from ingest.replication.throttle import MIN_THROTTLED_FETCH_BYTES, ReplicationThrottle


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_rate_over_a_window_stays_within_the_limit():
    clock = FakeClock()
    throttle = ReplicationThrottle(1_000_000, clock)
    assert throttle.delay_for(500_000) == pytest.approx(0.5)
    assert throttle.delay_for(500_000) == pytest.approx(1.0)  # no wait in between: debt adds up
    clock.now += 1.0
    assert throttle.delay_for(1_000_000) == pytest.approx(1.0)


def test_idle_time_is_not_saved_up_as_a_burst():
    clock = FakeClock()
    throttle = ReplicationThrottle(1_000_000, clock)
    clock.now += 60.0
    assert throttle.delay_for(1_000_000) == pytest.approx(1.0)


def test_the_time_a_fetch_took_counts_towards_paying_for_its_bytes():
    """A fetch sent at t that returned a second's worth at t + 0.6 waits 0.4 s, not 1 s: the
    copy runs at the rate, not at rate / (1 + fetch time)."""
    clock = FakeClock()
    throttle = ReplicationThrottle(1_000_000, clock)
    sent = throttle.now()
    clock.now += 0.6
    assert throttle.delay_for(1_000_000, sent) == pytest.approx(0.4)
    clock.now += 0.4
    sent = throttle.now()
    clock.now += 1.5  # slower than the rate: nothing to wait for
    assert throttle.delay_for(1_000_000, sent) == pytest.approx(0.0)


def test_a_throttled_fetch_asks_for_at_most_one_second_of_bytes():
    assert ReplicationThrottle(1_000_000).max_fetch_bytes(4 << 20) == 1_000_000
    assert ReplicationThrottle(10).max_fetch_bytes(4 << 20) == MIN_THROTTLED_FETCH_BYTES
    assert ReplicationThrottle(100 << 20).max_fetch_bytes(4 << 20) == 4 << 20
    with pytest.raises(ValueError):
        ReplicationThrottle(0)
