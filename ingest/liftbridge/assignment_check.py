"""Whether a Liftbridge group member may subscribe to a partition: the rule, without I/O.

A member subscribes with the group epoch of the answer that assigned it the partition. It
may when it is a member now, holds the partition in ``assigned`` (not in ``revoking``, which
it is giving up), and names an epoch between its member epoch (when its current assignment
was handed out) and the group's epoch: an older epoch comes from an assignment it has since
been told to change, a newer one from a group it never saw.
"""

from __future__ import annotations

from spark_log.api_models import GroupDescription
from spark_log.errors import FencedMemberError, StaleMemberEpochError


def check_assignment(
    group: GroupDescription, consumer: str, group_epoch: int, stream: str, partition: int
) -> None:
    """FencedMemberError (not a member) or StaleMemberEpochError (not assigned at that
    epoch); both answer FAILED_PRECONDITION, after which a client fetches its assignment."""
    member = next((m for m in group.members if m.member_id == consumer), None)
    if member is None:
        raise FencedMemberError(
            f"consumer {consumer} is not a member of group {group.group}: join it"
        )
    if partition not in member.assigned.get(stream, ()):
        raise StaleMemberEpochError(
            f"{stream}/{partition} is not assigned to consumer {consumer} of group "
            f"{group.group}: fetch the assignments"
        )
    if not member.member_epoch <= group_epoch <= group.group_epoch:
        raise StaleMemberEpochError(
            f"group epoch {group_epoch} of consumer {consumer} is outside "
            f"[{member.member_epoch}, {group.group_epoch}] for group {group.group}: "
            "fetch the assignments"
        )
