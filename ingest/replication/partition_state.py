"""A partition's replication state on this broker: role, leader epoch, replicas, ISR and HW rules.

Kafka keeps the same facts in its ``Partition``: which role ZooKeeper gave this broker, under
which leader epoch, who is in sync, and from that what the HW may become and how the ISR must
change. This class only holds and decides; it does no I/O, starts no task and reads no clock
(times are passed in), so every rule is unit-tested without NATS, ZooKeeper or asyncio.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from coordinator.znodes import NO_LEADER, PartitionState
from ingest.replication.follower_state import FollowerTracker
from ingest.replication.storage_stall import StorageStall
from spark_log.errors import LiftlogError, NotLeaderError, StorageError, StreamReadOnlyError

ROLE_NONE = "none"
ROLE_LEADER = "leader"
ROLE_FOLLOWER = "follower"
ROLE_OFFLINE = "offline"


@dataclass(frozen=True)
class IsrChange:
    """An ISR shrink or expansion to write to ZooKeeper, conditional on ``expected``."""

    expected: PartitionState
    new_isr: list[int]


class Partition:
    """Role, leader epoch, replicas, ISR, fencing and offline state of one partition replica."""

    def __init__(
        self,
        *,
        broker_id: int,
        stream: str,
        partition: int,
        min_isr: int,
        leader_epoch: int,
        isr: list[int],
        replicas: tuple[int, ...] = (),
        leader_id: int | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.stream = stream
        self.partition = partition
        self.min_isr = min_isr
        self.leader_epoch = leader_epoch
        self.isr = list(isr)
        self.replicas = tuple(replicas) or (broker_id,)
        self.leader_id = broker_id if leader_id is None else leader_id
        self.role = ROLE_NONE
        self.state_version = -1
        self.controller_epoch = 0
        self.fenced_reason: str | None = None
        # the znode version an ISR write failed against, while that failure is the fence
        self.isr_fence_version: int | None = None
        self.offline_reason: str | None = None
        self.storage_stall: StorageStall | None = None
        self.paused = False
        # paused for idleness (``auto_pause_ms``, ingest.replica.idle_pause): the writer holds
        # publishes until the mark is removed, then stores them
        self.idle_paused = False
        # set from the stream's znode on every reconcile: the writer refuses every cycle
        self.read_only = False
        self.followers = FollowerTracker(broker_id, self.replicas)

    # ----------------------------------------------------------------- role

    @property
    def name(self) -> str:
        return f"{self.stream}/{self.partition}"

    @property
    def is_leader(self) -> bool:
        return self.role == ROLE_LEADER and self.fenced_reason is None

    def leads_at(self, leader_epoch: int) -> bool:
        """Leader, not fenced, not offline, and still at ``leader_epoch`` (the exporter's last
        check before a Delta commit; it is called from a lake thread, so it only reads)."""
        return self.is_leader and self.leader_epoch == leader_epoch and self.offline_reason is None

    def role_for(self, state: PartitionState) -> str:
        """The role ZooKeeper's state gives this broker."""
        if state.leader == self.broker_id:
            return ROLE_LEADER
        if state.leader == NO_LEADER:
            return ROLE_OFFLINE
        return ROLE_FOLLOWER

    def observe(self, state: PartitionState, version: int) -> bool:
        """Take ISR, replicas and versions from ``state``; True when the role and leader epoch
        are unchanged (a new leader epoch always re-enters the role)."""
        same = self.role_for(state) == self.role and state.leader_epoch == self.leader_epoch
        self.state_version = version
        self._take_isr(state.isr)
        self.replicas = tuple(state.replicas)
        self.controller_epoch = state.controller_epoch
        return same

    def enter(self, state: PartitionState) -> str:
        """Adopt the role and leader epoch of ``state`` (after the old role has stopped)."""
        self.leader_epoch = state.leader_epoch
        self.leader_id = state.leader
        self.role = self.role_for(state)
        return self.role

    def leave(self) -> None:
        self.role = ROLE_NONE

    def start_leadership(self, now_ms: int) -> None:
        """Forget the followers' LEOs; each gets a full lag window to fetch again."""
        self.followers.reset(self.broker_id, self.replicas, now_ms)

    # ----------------------------------------------------------------- fencing, offline

    def fence(self, reason: str | None) -> bool:
        """Stop (reason) or resume (None) acknowledging; True when a leader is newly fenced
        (its parked acks=all requests must fail now)."""
        newly = reason is not None and self.fenced_reason is None and self.role == ROLE_LEADER
        self.fenced_reason = reason
        self.isr_fence_version = None
        return newly

    def fence_for_isr(self, reason: str, sent_version: int) -> bool:
        """Fence after an ISR write lost its conditional check against ``sent_version``: the
        state moved, and only a re-read of a newer version lifts it (``lift_isr_fence``); one
        the reconcile applied while the write was in flight already counts."""
        newly = self.fence(reason)
        self.isr_fence_version = sent_version
        if self.state_version > sent_version:
            self.lift_isr_fence()
        return newly and self.fenced_reason is not None

    def lift_isr_fence(self) -> bool:
        """After a reconcile re-read the state (``observe``) and found this broker still the
        leader at the same epoch: lift a fence an ISR write set, once the version read is newer
        than the one the write failed against (the ISR and version are then ZooKeeper's).
        A session fence stays: only the session's return lifts it. True when lifted."""
        fenced_at = self.isr_fence_version
        if fenced_at is None or self.role != ROLE_LEADER or self.state_version <= fenced_at:
            return False
        self.fenced_reason = None
        self.isr_fence_version = None
        return True

    def go_offline(self, reason: str) -> None:
        """Offline for good (until the node restarts): the log failed in a way that retrying
        does not fix."""
        self.offline_reason = reason
        self.storage_stall = None

    def stall_for_space(self, reason: str, now_ms: int, first_attempt: int = 0) -> None:
        """Refuse writes (as offline) until a retry finds the disk has space again; the retry
        backoff starts at ``first_attempt`` (``Backoff.first_attempt``)."""
        self.offline_reason = reason
        self.storage_stall = StorageStall(reason, now_ms, first_attempt=first_attempt)

    def resume_after_stall(self) -> None:
        """The disk took writes again: back to serving the role it has."""
        self.offline_reason = None
        self.storage_stall = None

    def offline_error(self) -> StorageError | None:
        if self.offline_reason is None:
            return None
        return StorageError(f"{self.name} is offline: {self.offline_reason}")

    def not_leader_error(self) -> NotLeaderError:
        return NotLeaderError(f"broker {self.broker_id} no longer leads {self.name}")

    def write_refusal(self) -> LiftlogError | None:
        """Why the leader's writer must refuse a cycle now, if it must."""
        if self.offline_reason is not None:
            return StorageError(self.offline_reason)
        if not self.is_leader:
            return NotLeaderError(
                self.fenced_reason or f"broker {self.broker_id} does not lead {self.name}"
            )
        if self.read_only:
            # checked again here, not only at intake: requests queued before the flag arrived
            # are refused too, so nothing reaches the log once a node has seen the flag
            return self.read_only_error()
        return None

    def read_only_error(self) -> StreamReadOnlyError:
        return StreamReadOnlyError(f"stream {self.stream} is read-only")

    # ----------------------------------------------------------------- ISR and HW

    @property
    def isr_ok(self) -> bool:
        """|ISR| >= min ISR: acks=all may be granted and the HW may advance (KIP-966)."""
        return len(self.isr) >= self.min_isr

    def high_watermark_target(self, leader_leo: int, current_hw: int) -> int | None:
        """The HW a leader may move to: min LEO over the ISR (``leader_leo`` counts the
        leader, durable per the fsync policy); None when it must hold."""
        if not self.is_leader or not self.isr_ok:
            return None
        target = self.followers.high_watermark(leader_leo, self.isr)
        return target if target > current_hw else None

    def record_follower_fetch(
        self, replica_id: int, fetch_offset: int, leader_leo: int, now_ms: int
    ) -> None:
        self.followers.record_fetch(replica_id, fetch_offset, leader_leo, now_ms)

    def isr_change(self, high_watermark: int, now_ms: int, max_lag_ms: int) -> IsrChange | None:
        """Leader: shrink lagging followers out, expand caught-up ones in; None if nothing
        changes (or this broker does not lead a replicated partition)."""
        if not self.is_leader or len(self.replicas) < 2:
            return None
        lagging = self.followers.lagging(self.isr, now_ms, max_lag_ms)
        returning = self.followers.caught_up(self.isr, high_watermark, now_ms, max_lag_ms)
        if not lagging and not returning:
            return None
        new_isr = sorted((set(self.isr) - set(lagging)) | set(returning))
        expected = PartitionState(
            leader=self.broker_id,
            leader_epoch=self.leader_epoch,
            isr=tuple(self.isr),
            replicas=self.replicas,
            controller_epoch=self.controller_epoch,
        )
        return IsrChange(expected, new_isr)

    def _take_isr(self, isr: Iterable[int]) -> None:
        """Adopt ``isr``; whoever left it must fetch again to come back."""
        new_isr = list(isr)
        self.followers.forget_recent_fetches(set(self.isr) - set(new_isr))
        self.isr = new_isr

    def apply_isr(self, isr: tuple[int, ...] | list[int], version: int) -> None:
        """The ISR ZooKeeper accepted, with its new znode version; an answer older than the
        state a reconcile applied meanwhile (a write that found nothing to change) is ignored."""
        if version < self.state_version:
            return
        self._take_isr(isr)
        self.state_version = version
