"""Which publish failures the client retries, how long it waits, and when it gives up."""

from __future__ import annotations

import pytest

from spark_log.client.publish_retry import (
    DEFAULT_DELIVERY_TIMEOUT_S,
    MAX_BACKOFF_S,
    backoff_s,
    is_retriable,
    retry_delay,
)
from spark_log.errors import (
    ExpectedOffsetMismatchError,
    LiftlogError,
    NoRespondersError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderError,
    RecordTooLargeError,
    RequestTimeoutError,
    StreamPausedError,
    UnavailableError,
)


@pytest.mark.parametrize("cls", [NoRespondersError, NotEnoughReplicasError])
@pytest.mark.parametrize("has_msg_id", [False, True])
def test_refusals_before_the_append_stored_nothing_so_they_are_always_retried(cls, has_msg_id):
    assert is_retriable(cls("x"), has_msg_id)


@pytest.mark.parametrize(
    "cls", [NotLeaderError, RequestTimeoutError, NotEnoughReplicasAfterAppendError]
)
def test_possibly_appended_failures_are_retried_only_with_a_msg_id(cls):
    assert not is_retriable(cls("x"), has_msg_id=False)
    assert is_retriable(cls("x"), has_msg_id=True)


@pytest.mark.parametrize(
    "cls",
    [
        StreamPausedError,
        RecordTooLargeError,
        ExpectedOffsetMismatchError,
        UnavailableError,
        LiftlogError,
    ],
)
@pytest.mark.parametrize("has_msg_id", [False, True])
def test_other_failures_reach_the_caller_at_once(cls, has_msg_id):
    assert not is_retriable(cls("x"), has_msg_id)


def test_backoff_doubles_from_50ms_up_to_one_second():
    assert [backoff_s(a) for a in range(1, 8)] == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert backoff_s(100) == MAX_BACKOFF_S


def _delay(exc: LiftlogError, attempt: int = 1, elapsed_s: float = 0.0, **kw: object):
    options: dict[str, object] = {"has_msg_id": False, "delivery_timeout_s": 30.0, **kw}
    return retry_delay(exc, attempt=attempt, elapsed_s=elapsed_s, **options)  # type: ignore[arg-type]


def test_a_retriable_failure_waits_its_backoff():
    assert _delay(NoRespondersError("x"), attempt=3) == pytest.approx(0.2)


@pytest.mark.parametrize("off", [0, 0.0, None])
def test_no_delivery_timeout_means_no_retry(off):
    assert _delay(NoRespondersError("x"), delivery_timeout_s=off) is None


def test_no_retry_whose_wait_would_end_past_the_delivery_timeout():
    assert _delay(NoRespondersError("x"), attempt=1, elapsed_s=29.98) is None
    assert _delay(NoRespondersError("x"), attempt=1, elapsed_s=29.98, delivery_timeout_s=31) == (
        pytest.approx(0.05)
    )


def test_a_non_retriable_failure_gets_no_delay():
    assert _delay(NotEnoughReplicasAfterAppendError("x")) is None
    assert _delay(NotLeaderError("x")) is None
    assert _delay(NotLeaderError("x"), has_msg_id=True) == pytest.approx(0.05)


def test_the_default_delivery_timeout_is_bounded():
    assert 0 < DEFAULT_DELIVERY_TIMEOUT_S <= 120


def test_giving_up_after_a_try_that_may_have_stored_is_indeterminate():
    """A timed-out try may have appended; a later retry's no_responders must not tell the
    caller that nothing was stored (the caller would then publish again: a duplicate)."""
    from spark_log.client.client import _raise_outcome

    earlier = RequestTimeoutError("no ack in time")
    with pytest.raises(RequestTimeoutError) as raised:
        _raise_outcome(NoRespondersError("nothing listens"), earlier)
    assert raised.value is earlier
    with pytest.raises(NoRespondersError):
        _raise_outcome(NoRespondersError("nothing listens"), None)
    with pytest.raises(NotLeaderError):
        _raise_outcome(NotLeaderError("moved"), earlier)
    # a later try refused for a reason of its own says nothing about the first
    with pytest.raises(RequestTimeoutError) as raised:
        _raise_outcome(StreamPausedError("paused meanwhile"), earlier)
    assert raised.value is earlier
