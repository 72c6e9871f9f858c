"""A cursor call goes on through a leader or ISR change of its ``__cursors`` partition, and
gives up at once on an answer a retry cannot change."""

from __future__ import annotations

import pytest

from spark_log.client.cursors import _retried
from spark_log.errors import CursorNotFoundError, NotLeaderError


def test_a_leader_change_is_retried_until_the_call_succeeds() -> None:
    answers: list[BaseException | str] = [NotLeaderError("moved"), NotLeaderError("moved"), "ok"]

    def call() -> str:
        answer = answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    assert _retried(call) == "ok"
    assert answers == []


def test_an_answer_a_retry_cannot_change_is_raised_at_once() -> None:
    calls = []

    def call() -> str:
        calls.append(1)
        raise CursorNotFoundError("never set")

    with pytest.raises(CursorNotFoundError):
        _retried(call)
    assert len(calls) == 1
