"""The restart backoff of ``liftlog standalone``: exponential and bounded."""

from __future__ import annotations

from liftlog.embedded.restarts import (
    RESTART_INITIAL_BACKOFF_S,
    RESTART_MAX_BACKOFF_S,
    restart_delay_s,
)


def test_backoff_doubles_from_the_initial_delay_up_to_the_maximum():
    delays = [restart_delay_s(n) for n in range(1, 12)]
    assert delays[:3] == [RESTART_INITIAL_BACKOFF_S, 2 * RESTART_INITIAL_BACKOFF_S, 4.0]
    assert delays == sorted(delays)
    assert max(delays) == RESTART_MAX_BACKOFF_S
