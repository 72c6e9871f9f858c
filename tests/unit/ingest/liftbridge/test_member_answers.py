"""``MemberAnswers``: a Liftbridge member's fetch becomes a well formed heartbeat of ours."""

from __future__ import annotations

import pytest

from ingest.liftbridge.member_answers import NOTHING_OWNED, RETRIED_EPOCH, Heartbeat, MemberAnswers
from spark_log.api_models import MemberAssignment
from spark_log.errors import StaleMemberEpochError

FORGET_AFTER_S = 60.0


def _answer(
    member_epoch: int, group_epoch: int, assigned: dict[str, list[int]]
) -> MemberAssignment:
    return MemberAssignment("g", "c1", member_epoch, group_epoch, assigned)


def test_the_epoch_last_given_heartbeats_with_the_last_assignment() -> None:
    answers = MemberAnswers(FORGET_AFTER_S)
    answers.remember(_answer(2, 3, {"a": [0, 1]}), now_s=10.0)
    assert answers.heartbeat("g", "c1", 3, now_s=11.0) == Heartbeat(2, {"a": [0, 1]})


def test_an_epoch_older_than_the_last_given_is_stale() -> None:
    answers = MemberAnswers(FORGET_AFTER_S)
    answers.remember(_answer(2, 3, {"a": [0]}), now_s=10.0)
    with pytest.raises(StaleMemberEpochError):
        answers.heartbeat("g", "c1", 2, now_s=11.0)


def test_an_unknown_member_or_a_newer_epoch_is_a_retried_heartbeat() -> None:
    """Another node answered it: nothing here is current, and nothing owned releases only
    what the member was already told to give up."""
    answers = MemberAnswers(FORGET_AFTER_S)
    retried = Heartbeat(RETRIED_EPOCH, NOTHING_OWNED)
    assert answers.heartbeat("g", "c1", 5, now_s=1.0) == retried
    answers.remember(_answer(2, 3, {"a": [0]}), now_s=10.0)
    assert answers.heartbeat("g", "c1", 4, now_s=11.0) == retried
    assert answers.heartbeat("g", "other", 3, now_s=11.0) == retried


def test_answers_are_forgotten_on_request_and_after_any_session() -> None:
    answers = MemberAnswers(FORGET_AFTER_S)
    answers.remember(_answer(2, 3, {"a": [0]}), now_s=10.0)
    answers.forget("g", "c1")
    assert answers.heartbeat("g", "c1", 1, now_s=11.0).member_epoch == RETRIED_EPOCH
    answers.remember(_answer(2, 3, {"a": [0]}), now_s=10.0)
    late = 10.0 + FORGET_AFTER_S + 1
    assert answers.heartbeat("g", "c1", 1, now_s=late).member_epoch == RETRIED_EPOCH


def test_silent_members_are_pruned_when_others_are_remembered() -> None:
    answers = MemberAnswers(FORGET_AFTER_S)
    for i in range(10):
        answers.remember(MemberAssignment("g", f"c{i}", 1, 1, {}), now_s=0.0)
    assert len(answers) == 10
    answers.remember(_answer(1, 1, {}), now_s=FORGET_AFTER_S * 3)
    assert len(answers) == 1
