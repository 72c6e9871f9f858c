"""A lost fetch (its NATS server died with it in flight) stalls acks=all publishes until the
follower's request times out, so that timeout stays close to the leader's longest wait."""

from __future__ import annotations

from ingest.replication.fetch_server import MAX_FOLLOWER_WAIT_MS
from ingest.replication.fetcher import FETCH_RESPONSE_GRACE_S, FETCH_WAIT_MS, fetch_timeout_s


def test_the_timeout_outlasts_the_leaders_wait() -> None:
    assert fetch_timeout_s() > FETCH_WAIT_MS / 1000
    assert fetch_timeout_s(MAX_FOLLOWER_WAIT_MS) > MAX_FOLLOWER_WAIT_MS / 1000


def test_a_lost_fetch_is_noticed_within_two_seconds() -> None:
    assert fetch_timeout_s() == FETCH_WAIT_MS / 1000 + FETCH_RESPONSE_GRACE_S
    assert fetch_timeout_s() <= 2.0
