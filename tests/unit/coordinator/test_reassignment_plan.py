"""Decommission plans: every replica off the broker, spread evenly, positions kept."""

from __future__ import annotations

import pytest

from coordinator.errors import InvalidReplicationFactorError
from coordinator.reassignment_plan import decommission_plan
from coordinator.znodes import PartitionState


def state(*replicas: int) -> PartitionState:
    return PartitionState(
        leader=replicas[0], leader_epoch=0, isr=replicas, replicas=replicas, controller_epoch=0
    )


def test_every_replica_leaves_the_broker_and_the_load_spreads():
    states = {
        "a": {0: state(1, 2), 1: state(2, 3), 2: state(3, 1)},
        "b": {0: state(1, 4)},
    }
    plan = decommission_plan(states, 1, [1, 2, 3, 4])
    assert set(plan) == {"a", "b"} and set(plan["a"]) == {0, 2}
    assert plan["a"][0][0] != 1 and plan["a"][0][1] == 2  # the preferred slot is replaced
    moved = [t for partitions in plan.values() for t in partitions.values()]
    assert all(1 not in t and len(set(t)) == len(t) for t in moved)
    assert plan["b"][0] != [4, 4]


def test_a_partition_on_every_broker_cannot_move():
    with pytest.raises(InvalidReplicationFactorError):
        decommission_plan({"a": {0: state(1, 2)}}, 1, [1, 2])


def test_a_broker_without_replicas_needs_no_plan():
    assert decommission_plan({"a": {0: state(2, 3)}}, 1, [1, 2, 3]) == {}
