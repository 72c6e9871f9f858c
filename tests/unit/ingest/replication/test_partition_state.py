"""``Partition``: role, leader epoch, fencing, the HW rule and ISR changes, as pure logic.

No NATS, no ZooKeeper, no event loop: ZooKeeper's state goes in as ``PartitionState`` values
and time as plain milliseconds from a manual clock.
"""

from __future__ import annotations

from coordinator.znodes import NO_LEADER, PartitionState
from ingest.replication.partition_state import (
    ROLE_FOLLOWER,
    ROLE_LEADER,
    ROLE_NONE,
    ROLE_OFFLINE,
    Partition,
)
from tests.unit.ingest.conftest import ManualClock

MAX_LAG_MS = 10_000


def _partition(broker_id: int = 1, replicas: tuple[int, ...] = (1, 2, 3)) -> Partition:
    return Partition(
        broker_id=broker_id,
        stream="orders",
        partition=0,
        min_isr=2,
        leader_epoch=-1,
        isr=list(replicas),
        replicas=replicas,
    )


def _state(leader: int, epoch: int, isr: tuple[int, ...] = (1, 2, 3)) -> PartitionState:
    return PartitionState(
        leader=leader, leader_epoch=epoch, isr=isr, replicas=(1, 2, 3), controller_epoch=4
    )


def _lead(p: Partition, clock: ManualClock, epoch: int = 5) -> None:
    state = _state(1, epoch)
    assert p.observe(state, version=7) is False
    assert p.enter(state) == ROLE_LEADER
    p.start_leadership(clock.now_ms())


def test_role_follows_zookeeper_and_a_new_epoch_reenters_it(clock):
    p = _partition()
    assert p.role == ROLE_NONE
    assert p.role_for(_state(2, 1)) == ROLE_FOLLOWER
    assert p.role_for(_state(NO_LEADER, 1)) == ROLE_OFFLINE
    _lead(p, clock, epoch=5)
    assert (p.role, p.leader_epoch, p.leader_id, p.state_version) == (ROLE_LEADER, 5, 1, 7)
    assert p.controller_epoch == 4
    assert p.observe(_state(1, 5, isr=(1, 2)), version=8) is True  # same role, same epoch
    assert p.isr == [1, 2] and p.state_version == 8
    assert p.observe(_state(1, 6), version=9) is False  # a new leader epoch re-enters
    p.leave()
    assert p.role == ROLE_NONE and not p.is_leader


def test_fencing_stops_leadership_and_reports_only_a_new_fence(clock):
    p = _partition()
    _lead(p, clock)
    assert p.is_leader and p.leads_at(5) and not p.leads_at(4)
    assert p.fence("session lost") is True
    assert p.fence("still lost") is False  # already fenced: parked requests already failed
    assert not p.is_leader and not p.leads_at(5)
    refusal = p.write_refusal()
    assert refusal is not None and refusal.code == "not_leader"
    assert refusal.message == "still lost"
    assert p.fence(None) is False
    assert p.is_leader and p.write_refusal() is None


def test_a_refused_isr_write_fences_until_a_newer_state_is_read(clock):
    """The state moved under the leader's ISR write (the controller dropped a dead
    follower): the leader stops acknowledging, and resumes once the reconcile has read a
    newer version naming it leader at the same epoch (it never did: it stayed fenced)."""
    p = _partition()
    _lead(p, clock)  # version 7
    assert p.fence_for_isr("ISR write failed", sent_version=7) is True
    assert not p.is_leader
    assert p.lift_isr_fence() is False  # nothing newer read yet
    assert p.observe(_state(1, 5, isr=(1,)), version=9) is True
    assert p.lift_isr_fence() is True
    assert p.is_leader and p.isr == [1]


def test_a_newer_state_read_while_the_isr_write_was_in_flight_lifts_at_once(clock):
    p = _partition()
    _lead(p, clock)
    p.observe(_state(1, 5, isr=(1, 3)), version=8)  # applied while the write (at 7) flew
    assert p.fence_for_isr("ISR write failed", sent_version=7) is False
    assert p.is_leader


def test_a_session_fence_is_not_lifted_by_a_reread(clock):
    p = _partition()
    _lead(p, clock)
    p.fence_for_isr("ISR write failed", sent_version=7)
    p.fence("ZooKeeper session lost")
    p.observe(_state(1, 5), version=9)
    assert p.lift_isr_fence() is False
    assert not p.is_leader


def test_offline_refuses_writes_and_ends_lake_commits(clock):
    p = _partition()
    _lead(p, clock)
    assert p.offline_error() is None
    p.go_offline("disk full")
    refusal = p.write_refusal()
    assert refusal is not None and refusal.code == "storage_error"
    error = p.offline_error()
    assert error is not None and "orders/0 is offline: disk full" in error.message
    assert p.is_leader and not p.leads_at(5)


def test_high_watermark_is_min_leo_of_the_isr_and_holds_below_min_isr(clock):
    p = _partition()
    _lead(p, clock)
    assert p.high_watermark_target(leader_leo=10, current_hw=0) is None  # followers at 0
    p.record_follower_fetch(2, 8, leader_leo=10, now_ms=clock.now_ms())
    p.record_follower_fetch(3, 6, leader_leo=10, now_ms=clock.now_ms())
    assert p.high_watermark_target(leader_leo=10, current_hw=0) == 6
    assert p.high_watermark_target(leader_leo=10, current_hw=6) is None  # never backwards
    p.apply_isr([1], version=8)  # |ISR| 1 < min ISR 2: KIP-966, the HW holds
    assert not p.isr_ok
    assert p.high_watermark_target(leader_leo=10, current_hw=0) is None


def test_a_follower_never_computes_a_high_watermark(clock):
    p = _partition(broker_id=2)
    state = _state(1, 3)
    p.observe(state, 1)
    assert p.enter(state) == ROLE_FOLLOWER
    assert p.high_watermark_target(leader_leo=10, current_hw=0) is None
    assert p.isr_change(0, clock.now_ms(), MAX_LAG_MS) is None


def test_isr_shrinks_a_lagging_follower_and_expands_it_when_caught_up(clock):
    p = _partition()
    _lead(p, clock)
    assert p.isr_change(0, clock.now_ms(), MAX_LAG_MS) is None  # a full lag window to start
    clock.advance(MAX_LAG_MS + 1)
    p.record_follower_fetch(2, 0, leader_leo=0, now_ms=clock.now_ms())
    change = p.isr_change(0, clock.now_ms(), MAX_LAG_MS)
    assert change is not None and change.new_isr == [1, 2]
    assert change.expected.isr == (1, 2, 3)
    assert (change.expected.leader_epoch, change.expected.controller_epoch) == (5, 4)
    p.apply_isr(change.new_isr, version=8)
    assert p.isr == [1, 2] and p.state_version == 8
    p.record_follower_fetch(3, 0, leader_leo=0, now_ms=clock.now_ms())
    back = p.isr_change(0, clock.now_ms(), MAX_LAG_MS)
    assert back is not None and back.new_isr == [1, 2, 3]


def test_a_single_replica_partition_never_changes_its_isr(clock):
    p = _partition(replicas=(1,))
    state = PartitionState(leader=1, leader_epoch=0, isr=(1,), replicas=(1,), controller_epoch=1)
    p.observe(state, 0)
    p.enter(state)
    clock.advance(10 * MAX_LAG_MS)
    assert p.isr_change(0, clock.now_ms(), MAX_LAG_MS) is None


def test_a_follower_the_controller_removed_must_fetch_again_to_rejoin(clock):
    """The controller drops a dead follower from the ISR while its last fetch is still inside
    the lag window: that old fetch must not vote it straight back in."""
    p = _partition()
    _lead(p, clock)
    p.record_follower_fetch(3, fetch_offset=0, leader_leo=0, now_ms=clock.now_ms())
    p.record_follower_fetch(2, fetch_offset=0, leader_leo=0, now_ms=clock.now_ms())
    assert p.observe(_state(1, 5, isr=(1, 2)), version=8) is True  # the controller removed 3
    clock.advance(100)
    assert p.isr_change(high_watermark=0, now_ms=clock.now_ms(), max_lag_ms=MAX_LAG_MS) is None
    p.record_follower_fetch(3, fetch_offset=0, leader_leo=0, now_ms=clock.now_ms())
    change = p.isr_change(high_watermark=0, now_ms=clock.now_ms(), max_lag_ms=MAX_LAG_MS)
    assert change is not None and change.new_isr == [1, 2, 3]


def test_an_isr_fence_is_lifted_by_a_new_epoch_that_keeps_the_leader(clock):
    """The write failed because the controller bumped the epoch (a reassignment step) and
    kept this leader: re-entering the role at the new epoch is the re-read the fence awaited."""
    p = _partition()
    _lead(p, clock)
    p.fence_for_isr("ISR write failed", sent_version=7)
    assert not p.is_leader
    assert p.observe(_state(1, 6), version=9) is False
    p.enter(_state(1, 6))
    assert p.lift_isr_fence() is True
    assert p.is_leader


def test_an_isr_answer_older_than_the_state_read_is_ignored(clock):
    p = _partition()
    _lead(p, clock)
    assert p.observe(_state(1, 5, isr=(1, 2)), version=9) is True
    p.apply_isr([1, 2, 3], version=7)  # a write that found nothing to change answers late
    assert (p.isr, p.state_version) == ([1, 2], 9)
