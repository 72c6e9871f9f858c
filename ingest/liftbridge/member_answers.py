"""What each Liftbridge group member was last told, so its heartbeats speak our protocol.

A Liftbridge member sends only the group epoch it last saw; our coordinator's heartbeat wants
the member epoch and the partitions the member still owns. A Liftbridge client stops
consuming whatever its last assignment left out, so what it owns is exactly the last
assignment it was given: keeping that answer per member lets each FetchConsumerGroupAssignments
become a well formed heartbeat that also acknowledges the revocations of the previous one.

The answers live on the node that gave them. A member whose call reaches another node (or
one that saw a newer epoch elsewhere) is sent as a retried heartbeat: epoch 0 and nothing
owned, which the coordinator accepts without releasing anything the member still consumes.
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_log.api_models import MemberAssignment
from spark_log.errors import StaleMemberEpochError

ByStream = dict[str, list[int]]
NOTHING_OWNED: ByStream = {}
RETRIED_EPOCH = 0
"""A member epoch the coordinator takes as a response lost on the way (never newer)."""


@dataclass(frozen=True)
class LastAnswer:
    member_epoch: int
    group_epoch: int
    assigned: ByStream
    at_s: float
    """When it was given (monotonic seconds): forgotten once no session could still run."""


@dataclass(frozen=True)
class Heartbeat:
    """Our heartbeat's arguments for one FetchConsumerGroupAssignments."""

    member_epoch: int
    owned: ByStream


class MemberAnswers:
    """The last answer given to each ``(group, consumer)`` by this node, kept no longer than
    ``forget_after_s`` (the longest session a member can have) without a new one."""

    def __init__(self, forget_after_s: float) -> None:
        self._forget_after_s = forget_after_s
        self._answers: dict[tuple[str, str], LastAnswer] = {}
        self._pruned_at_s = 0.0

    def remember(self, answer: MemberAssignment, now_s: float) -> None:
        key = (answer.group, answer.member_id)
        self._answers[key] = LastAnswer(
            answer.member_epoch, answer.group_epoch, dict(answer.assigned), now_s
        )
        self._prune(now_s)

    def forget(self, group: str, consumer: str) -> None:
        self._answers.pop((group, consumer), None)

    def heartbeat(self, group: str, consumer: str, epoch: int, now_s: float) -> Heartbeat:
        """The heartbeat for a member that names group epoch ``epoch``.

        An epoch older than the one this node last gave the member is stale (it missed an
        answer, and with it a revocation): StaleMemberEpochError, the member joins again.
        The epoch last given: the member epoch and assignment of that answer. Unknown here,
        or newer (another node answered since): a retried heartbeat.
        """
        last = self._answers.get((group, consumer))
        if last is not None and now_s - last.at_s > self._forget_after_s:
            last = None
        if last is None or epoch > last.group_epoch:
            return Heartbeat(RETRIED_EPOCH, NOTHING_OWNED)
        if epoch < last.group_epoch:
            raise StaleMemberEpochError(
                f"consumer {consumer} of group {group} sent epoch {epoch}, older than "
                f"epoch {last.group_epoch} it was last given: join the group again"
            )
        return Heartbeat(last.member_epoch, last.assigned)

    def __len__(self) -> int:
        return len(self._answers)

    def _prune(self, now_s: float) -> None:
        """Drop the answers of members silent for longer than any session (at most once per
        ``forget_after_s``, so remembering stays O(1) amortized)."""
        if now_s - self._pruned_at_s < self._forget_after_s:
            return
        self._pruned_at_s = now_s
        expired = [k for k, a in self._answers.items() if now_s - a.at_s > self._forget_after_s]
        for key in expired:
            del self._answers[key]
