"""``check_assignment``: who may subscribe to which partition at which group epoch."""

from __future__ import annotations

import pytest

from ingest.liftbridge.assignment_check import check_assignment
from spark_log.api_models import GroupDescription, GroupMember
from spark_log.errors import FencedMemberError, StaleMemberEpochError

GROUP = GroupDescription(
    "g",
    group_epoch=5,
    state="reconciling",
    coordinator=1,
    members=(
        GroupMember("c1", None, 3, ("a",), assigned={"a": [0, 1]}, revoking={"a": [2]}),
        GroupMember("c2", None, 5, ("a",), assigned={"a": [3]}),
    ),
)


@pytest.mark.parametrize("epoch", [3, 4, 5])
def test_a_member_subscribes_to_what_it_holds_from_its_epoch_on(epoch: int) -> None:
    check_assignment(GROUP, "c1", epoch, "a", 1)


def test_a_stranger_is_fenced() -> None:
    with pytest.raises(FencedMemberError):
        check_assignment(GROUP, "c9", 5, "a", 0)


@pytest.mark.parametrize(
    ("consumer", "epoch", "stream", "partition"),
    [
        ("c1", 5, "a", 2),  # it is giving that one up
        ("c1", 5, "a", 3),  # another member's
        ("c1", 5, "b", 0),  # a stream it does not consume
        ("c1", 2, "a", 0),  # from before its current assignment
        ("c1", 6, "a", 0),  # from an epoch the group never reached
    ],
)
def test_anything_else_is_stale(consumer: str, epoch: int, stream: str, partition: int) -> None:
    with pytest.raises(StaleMemberEpochError):
        check_assignment(GROUP, consumer, epoch, stream, partition)
