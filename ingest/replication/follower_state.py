"""What a partition leader knows about its followers: their LEOs and when they last caught up.

Kafka's rules: a fetch at offset o means the follower holds everything below o (the fetch is
the ack); a follower is caught up when it fetches at or past the leader's LEO as of its previous
fetch; the HW is the minimum LEO over the ISR; a follower that has not caught up within
``replica_lag_time_max_s`` leaves the ISR, and one that reaches the HW rejoins it. Pure logic,
clock passed in, so the rules are unit-tested without processes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

# a fetch time older than any lag window: "has not fetched since it left the ISR"
NO_RECENT_FETCH_MS = -(2**62)


@dataclass(slots=True)
class FollowerState:
    log_end_offset: int = 0
    last_caught_up_ms: int = 0
    last_fetch_leader_leo: int = 0  # the leader's LEO when this follower last fetched
    last_fetch_ms: int = 0


@dataclass
class FollowerTracker:
    leader_id: int
    replicas: tuple[int, ...]
    followers: dict[int, FollowerState] = field(default_factory=dict)

    def reset(self, leader_id: int, replicas: tuple[int, ...], now_ms: int) -> None:
        """New leadership: forget every LEO (a new leader learns them from the next fetches)
        but give every follower a full lag window to show up."""
        self.leader_id = leader_id
        self.replicas = replicas
        self.followers = {
            r: FollowerState(last_caught_up_ms=now_ms, last_fetch_ms=now_ms)
            for r in replicas
            if r != leader_id
        }

    def record_fetch(self, replica: int, fetch_offset: int, leader_leo: int, now_ms: int) -> None:
        state = self.followers.setdefault(replica, FollowerState())
        if fetch_offset >= state.last_fetch_leader_leo or fetch_offset >= leader_leo:
            state.last_caught_up_ms = now_ms
        state.log_end_offset = fetch_offset
        state.last_fetch_leader_leo = leader_leo
        state.last_fetch_ms = now_ms

    def high_watermark(self, leader_leo: int, isr: tuple[int, ...] | list[int]) -> int:
        """Minimum LEO over the ISR (the leader counts with ``leader_leo``)."""
        hw = leader_leo
        for replica in isr:
            if replica != self.leader_id:
                state = self.followers.get(replica)
                hw = min(hw, state.log_end_offset if state else 0)
        return hw

    def lagging(self, isr: tuple[int, ...] | list[int], now_ms: int, max_lag_ms: int) -> list[int]:
        """ISR followers that have not caught up within ``max_lag_ms`` (to shrink away)."""
        out = []
        for replica in isr:
            state = self.followers.get(replica)
            if replica != self.leader_id and (
                state is None or now_ms - state.last_caught_up_ms > max_lag_ms
            ):
                out.append(replica)
        return out

    def caught_up(
        self,
        isr: tuple[int, ...] | list[int],
        high_watermark: int,
        now_ms: int,
        max_lag_ms: int,
    ) -> list[int]:
        """Out-of-ISR followers whose LEO reached the HW and that fetched within the lag
        window (to expand back in). The recency test keeps a dead follower's last known LEO
        on an idle partition from voting it back in: it must be fetching."""
        return [
            replica
            for replica, state in self.followers.items()
            if replica not in isr
            and replica in self.replicas
            and state.log_end_offset >= high_watermark
            and now_ms - state.last_fetch_ms < max_lag_ms
        ]

    def forget_recent_fetches(self, replicas: Iterable[int]) -> None:
        """Followers that just left the ISR must fetch again before they may rejoin it. A
        fetch seen before the removal would otherwise vote straight back in a follower the
        controller removed because it died (its last fetch is still inside the lag window),
        and the leader's ISR write would then race the controller's for ever."""
        for replica in replicas:
            state = self.followers.get(replica)
            if state is not None:
                state.last_fetch_ms = NO_RECENT_FETCH_MS

    def min_log_end_offset(self) -> int:
        """The lowest LEO any follower has reported (0 before the first fetches)."""
        return min((s.log_end_offset for s in self.followers.values()), default=0)

    def log_end_offsets(self) -> dict[int, int]:
        return {r: s.log_end_offset for r, s in self.followers.items()}
