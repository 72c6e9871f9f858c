"""Preferred-leader election and the leader-imbalance check: pure rules, no ZooKeeper."""

from __future__ import annotations

from coordinator.preferred_leader import (
    brokers_over_imbalance,
    elect_preferred,
    imbalance_ratios,
    why_not_preferred,
)
from coordinator.znodes import NO_LEADER, PartitionState


def state(
    leader: int, isr: tuple[int, ...], replicas: tuple[int, ...] = (1, 2, 3), leader_epoch: int = 4
) -> PartitionState:
    return PartitionState(
        leader=leader, leader_epoch=leader_epoch, isr=isr, replicas=replicas, controller_epoch=7
    )


def test_the_preferred_replica_in_sync_takes_over_with_a_new_epoch_and_the_same_isr():
    after = elect_preferred(state(2, (2, 3, 1)), {1, 2, 3})
    assert after == state(1, (2, 3, 1), leader_epoch=5)


def test_no_change_when_the_preferred_replica_already_leads():
    assert elect_preferred(state(1, (1, 2, 3)), {1, 2, 3}) is None
    assert why_not_preferred(state(1, (1, 2, 3)), {1, 2, 3}) is None


def test_a_preferred_replica_outside_the_isr_never_leads():
    before = state(2, (2, 3))
    assert elect_preferred(before, {1, 2, 3}) is None
    assert "not in the ISR" in (why_not_preferred(before, {1, 2, 3}) or "")


def test_a_dead_or_stopping_preferred_replica_never_leads():
    before = state(2, (1, 2, 3))
    assert elect_preferred(before, {2, 3}) is None
    assert "not live" in (why_not_preferred(before, {2, 3}) or "")
    assert elect_preferred(before, {1, 2, 3}, shutting_down={1}) is None
    assert "shutting down" in (why_not_preferred(before, {1, 2, 3}, shutting_down={1}) or "")


def test_an_offline_partition_gets_its_preferred_in_sync_replica():
    after = elect_preferred(state(NO_LEADER, (1,)), {1, 2})
    assert after is not None and after.leader == 1 and after.leader_epoch == 5


def test_imbalance_is_the_share_of_preferred_partitions_led_elsewhere():
    states = [
        state(2, (1, 2, 3), replicas=(1, 2, 3)),
        state(1, (1, 2, 3), replicas=(1, 3, 2)),
        state(2, (1, 2, 3), replicas=(2, 3, 1)),
        state(3, (1, 2, 3), replicas=(3, 1, 2)),
    ]
    ratios = imbalance_ratios(states)
    assert ratios == {1: 0.5, 2: 0.0, 3: 0.0}
    assert brokers_over_imbalance(ratios, 10.0) == {1}
    assert brokers_over_imbalance(ratios, 50.0) == frozenset()
