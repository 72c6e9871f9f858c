"""Partition reassignment as a pure state machine: add, catch up, move leader, shrink."""

from __future__ import annotations

import pytest

from coordinator.errors import ZNodeFormatError
from coordinator.reassignment import Phase, next_step, phase
from coordinator.znodes import PartitionReassignment, PartitionState

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
