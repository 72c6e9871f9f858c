"""The leader's view of its followers: HW = min ISR LEO, shrink after lag, expand at HW."""

from __future__ import annotations

from ingest.replication.follower_state import FollowerTracker


def _tracker(now: int = 0) -> FollowerTracker:
    tracker = FollowerTracker(1, (1, 2, 3))
    tracker.reset(1, (1, 2, 3), now)
    return tracker


def test_hw_is_the_minimum_leo_over_the_isr():
    tracker = _tracker()
    assert tracker.high_watermark(10, [1, 2, 3]) == 0  # followers not heard from yet
    tracker.record_fetch(2, 10, leader_leo=10, now_ms=5)
    tracker.record_fetch(3, 7, leader_leo=10, now_ms=5)
    assert tracker.high_watermark(10, [1, 2, 3]) == 7
    assert tracker.high_watermark(10, [1, 2]) == 10  # 3 out of the ISR: it no longer holds the HW
    assert tracker.high_watermark(10, [1]) == 10


def test_follower_that_stops_catching_up_lags_out_then_rejoins_at_hw():
    tracker = _tracker(now=0)
    tracker.record_fetch(2, 10, leader_leo=10, now_ms=100)
    tracker.record_fetch(3, 4, leader_leo=10, now_ms=100)
    assert tracker.lagging([1, 2, 3], now_ms=100, max_lag_ms=1000) == []
    # 3 keeps fetching below the leader's previous LEO: never caught up again
    tracker.record_fetch(3, 5, leader_leo=20, now_ms=900)
    tracker.record_fetch(2, 20, leader_leo=20, now_ms=900)
    tracker.record_fetch(3, 6, leader_leo=30, now_ms=1200)
    assert tracker.lagging([1, 2, 3], now_ms=1200, max_lag_ms=1000) == [3]
    assert tracker.caught_up([1, 2], high_watermark=20, now_ms=1200, max_lag_ms=1000) == []
    tracker.record_fetch(3, 20, leader_leo=30, now_ms=1300)
    assert tracker.caught_up([1, 2], high_watermark=20, now_ms=1300, max_lag_ms=1000) == [3]


def test_dead_follower_on_an_idle_partition_does_not_vote_itself_back_in():
    tracker = _tracker(now=0)
    tracker.record_fetch(3, 20, leader_leo=20, now_ms=100)  # caught up, then it dies
    tracker.record_fetch(2, 20, leader_leo=20, now_ms=1200)
    assert tracker.lagging([1, 2, 3], now_ms=1200, max_lag_ms=1000) == [3]
    # the HW never moved, so its last known LEO still reaches it: not enough
    assert tracker.caught_up([1, 2], high_watermark=20, now_ms=1200, max_lag_ms=1000) == []


def test_silent_follower_lags_out_after_reset_window():
    tracker = _tracker(now=0)
    assert tracker.lagging([1, 2, 3], now_ms=500, max_lag_ms=1000) == []
    assert tracker.lagging([1, 2, 3], now_ms=1001, max_lag_ms=1000) == [2, 3]
