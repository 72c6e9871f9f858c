"""When the client publishes a record again after a failure, and how long it waits first.

A leadership change (a reassignment, a preferred-leader election, a failover) leaves a
partition without a listening leader for a moment, and a restarting follower leaves its ISR
below min ISR for a while. Like a Kafka producer (``retries``,
``retry.backoff.ms``, ``delivery.timeout.ms``), the client retries the failures that cannot
have stored the record, with a short doubling backoff, until ``delivery_timeout_s`` has passed
since the first attempt. Everything else reaches the caller at once.

- ``no_responders``: nothing listened on the subject, so nothing was appended. Always retried.
- ``not_enough_replicas``: the leader refused an ``acks=all`` publish before the append because
  its ISR was smaller than min ISR, so nothing was appended. Always retried, as Kafka retries
  ``NotEnoughReplicas``: a follower restarting or catching up is back in the ISR within
  moments, and the publish then succeeds; an ISR that stays too small reaches the caller once
  the delivery timeout has passed.
- ``not_leader``: usually refused before the append, but a leader that loses its leadership
  also fails the acks=all publishes parked waiting for the high watermark, which it had
  appended and which the new leader may hold. Retried only when the publish carries a
  ``Nats-Msg-Id``: the new leader then acks the copy it holds as a duplicate.
- ``timeout`` (no ack in time): the record may have been appended. Retried only with a
  ``Nats-Msg-Id``, for the same reason.
- ``not_enough_replicas_after_append``: the ISR fell below min ISR after the record was
  appended; it is committed if the ISR heals. Retried only with a ``Nats-Msg-Id``, for the
  same reason.
- ``stream_paused``, ``record_too_large`` and the rest: never; they need the operator or the
  caller.
"""

from __future__ import annotations

from spark_log.errors import (
    LiftlogError,
    NoRespondersError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderError,
    RequestTimeoutError,
)

DEFAULT_DELIVERY_TIMEOUT_S = 30.0
"""Kafka's ``delivery.timeout.ms`` is 120 s; a leadership change here takes well under a
second, so 30 s bounds a publish that cannot succeed without hiding a real outage long."""
INITIAL_BACKOFF_S = 0.05
MAX_BACKOFF_S = 1.0


def stored_nothing(exc: LiftlogError) -> bool:
    """Whether ``exc`` proves this one try appended nothing (refused before the append)."""
    return isinstance(exc, NoRespondersError | NotEnoughReplicasError)


def possibly_stored(exc: LiftlogError) -> bool:
    """Whether this one try may have appended the record (its outcome is unknown or the
    refusal came after the append)."""
    return isinstance(exc, NotLeaderError | RequestTimeoutError | NotEnoughReplicasAfterAppendError)


def is_retriable(exc: LiftlogError, has_msg_id: bool) -> bool:
    """Whether publishing again cannot store the record twice (see the module docstring)."""
    if stored_nothing(exc):
        return True  # refused before anything was appended
    if possibly_stored(exc):
        return has_msg_id  # possibly appended: only dedup makes publishing again safe
    return False


def backoff_s(attempt: int) -> float:
    """The wait before retry ``attempt`` (1 for the first): 50 ms doubling up to 1 s."""
    return min(MAX_BACKOFF_S, INITIAL_BACKOFF_S * 2.0 ** max(0, attempt - 1))


def retry_delay(
    exc: LiftlogError,
    *,
    has_msg_id: bool,
    attempt: int,
    elapsed_s: float,
    delivery_timeout_s: float | None,
) -> float | None:
    """How long to wait before retry ``attempt``, or None to hand ``exc`` to the caller.

    None when retries are off (``delivery_timeout_s`` 0 or None), the error is not retriable,
    or the wait would end past the delivery timeout (a retry then could not be waited for).
    """
    if not delivery_timeout_s or not is_retriable(exc, has_msg_id):
        return None
    delay = backoff_s(attempt)
    if elapsed_s + delay >= delivery_timeout_s:
        return None
    return delay
