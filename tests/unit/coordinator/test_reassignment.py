"""Partition reassignment as a pure state machine: add, catch up, move leader, shrink; and
its cancel: leader back to an original replica, original replicas restored."""

from __future__ import annotations

import dataclasses

import pytest

from coordinator.errors import ZNodeFormatError
from coordinator.reassignment import Phase, cancel_phase, cancel_step, next_step, phase
from coordinator.znodes import NO_LEADER, PartitionReassignment, PartitionState

LIVE = {1, 2, 3, 4}


def state(
    leader: int, isr: tuple[int, ...], replicas: tuple[int, ...], epoch: int = 3
) -> PartitionState:
    return PartitionState(
        leader=leader, leader_epoch=epoch, isr=isr, replicas=replicas, controller_epoch=2
    )


def test_moving_one_two_to_two_three_walks_every_step():
    target = (2, 3)
    start = state(1, (1, 2), (1, 2))
    assert phase(start, target) is Phase.ADDING
    added = next_step(start, target, LIVE)
    assert added == state(1, (1, 2), (1, 2, 3), epoch=4)
    assert phase(added, target) is Phase.CATCHING_UP
    assert next_step(added, target, LIVE) is None  # waits for the leader to expand the ISR
    caught_up = state(1, (1, 2, 3), (1, 2, 3), epoch=4)
    moved = next_step(caught_up, target, LIVE)
    assert moved == state(2, (1, 2, 3), (1, 2, 3), epoch=5)
    shrunk = next_step(moved, target, LIVE)
    assert shrunk == state(2, (2, 3), (2, 3), epoch=6)
    assert phase(shrunk, target) is Phase.DONE
    assert next_step(shrunk, target, LIVE) is None


def test_the_leader_only_moves_to_a_live_in_sync_target_not_shutting_down():
    caught_up = state(1, (1, 2, 3), (1, 2, 3))
    assert next_step(caught_up, (2, 3), {1, 3}, shutting_down={3}) is None
    moved = next_step(caught_up, (2, 3), {1, 2, 3}, shutting_down={2})
    assert moved is not None and moved.leader == 3


def test_reordering_only_rewrites_the_replica_order():
    before = state(1, (1, 2), (1, 2))
    after = next_step(before, (1, 2)[::-1], LIVE)
    assert after == state(1, (1, 2), (2, 1), epoch=4)


def test_a_reassignment_znode_is_versioned_json():
    item = PartitionReassignment("s", 0, (2, 3), (1, 2), 1_700_000_000_000)
    data = item.to_json()
    assert data["version"] == 1 and data["target_replicas"] == [2, 3]
    assert PartitionReassignment.from_json(data) == item
    with pytest.raises(ZNodeFormatError):
        PartitionReassignment("s", 0, (2, 2), (1, 2), 0)


# -- cancelling (KIP-455's cancel): back to the original replicas -------------------------------


def test_a_cancel_while_catching_up_drops_the_added_replica_in_one_step():
    original, target = (1, 2), (2, 3)
    catching_up = state(1, (1, 2), (1, 2, 3), epoch=4)
    assert cancel_phase(catching_up, original, target) is Phase.CANCELLING
    reverted = cancel_step(catching_up, original, target, LIVE)
    assert reverted == state(1, (1, 2), (1, 2), epoch=5)
    assert cancel_phase(reverted, original, target) is Phase.DONE
    assert cancel_step(reverted, original, target, LIVE) is None


def test_a_cancel_moves_leadership_off_an_added_replica_first():
    original, target = (1, 2), (3, 4)
    led_by_added = state(3, (1, 2, 3, 4), (1, 2, 3, 4), epoch=6)
    moved = cancel_step(led_by_added, original, target, LIVE)
    assert moved == state(1, (1, 2, 3, 4), (1, 2, 3, 4), epoch=7)
    reverted = cancel_step(moved, original, target, LIVE)
    assert reverted == state(1, (1, 2), (1, 2), epoch=8)
    assert cancel_phase(reverted, original, target) is Phase.DONE


def test_the_new_leader_of_a_cancel_is_an_original_replica_live_in_sync_not_shutting_down():
    original, target = (1, 2), (3, 4)
    led_by_added = state(3, (2, 3, 4), (1, 2, 3, 4))
    assert cancel_step(led_by_added, original, target, LIVE, shutting_down={2}) is None
    assert cancel_step(led_by_added, original, target, {1, 3, 4}) is None  # 2 is down
    moved = cancel_step(led_by_added, original, target, LIVE)
    assert moved is not None and moved.leader == 2  # 1 is not in the ISR


def test_a_cancel_keeps_out_of_sync_original_replicas_and_drops_added_ones_from_the_isr():
    original, target = (1, 2), (2, 3)
    state_now = state(2, (2, 3), (1, 2, 3))  # 1 fell out of the ISR meanwhile
    reverted = cancel_step(state_now, original, target, LIVE)
    assert reverted is not None
    assert reverted.replicas == (1, 2) and reverted.isr == (2,) and reverted.leader == 2


def test_an_offline_partition_waits_for_an_original_replica_to_lead_before_reverting():
    original, target = (1, 2), (2, 3)
    offline = state(NO_LEADER, (1,), (1, 2, 3))
    assert cancel_step(offline, original, target, {2, 3}) is None
    moved = cancel_step(offline, original, target, LIVE)
    assert moved is not None and moved.leader == 1 and moved.replicas == (1, 2, 3)


def test_a_cancel_before_the_first_step_or_after_the_last_has_nothing_to_revert():
    original, target = (1, 2), (2, 3)
    untouched = state(1, (1, 2), (1, 2))
    completed = state(2, (2, 3), (2, 3))
    for now in (untouched, completed):
        assert cancel_phase(now, original, target) is Phase.DONE
        assert cancel_step(now, original, target, LIVE) is None


def test_the_cancelling_mark_is_written_only_once_set_and_old_znodes_still_read():
    item = PartitionReassignment("s", 0, (2, 3), (1, 2), 1_700_000_000_000)
    assert "cancelling" not in item.to_json()  # byte-compatible with znodes before the field
    assert PartitionReassignment.from_json(item.to_json()).cancelling is False
    marked = dataclasses.replace(item, cancelling=True)
    assert marked.to_json()["cancelling"] is True
    assert PartitionReassignment.from_json(marked.to_json()) == marked
    with pytest.raises(ZNodeFormatError):
        PartitionReassignment("s", 0, (2, 3), (), 0)
    with pytest.raises(ZNodeFormatError):
        PartitionReassignment.from_json({**item.to_json(), "cancelling": "yes"})
