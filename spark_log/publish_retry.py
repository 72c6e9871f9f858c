"""When the client publishes a record again after a failure, and how long it waits first.

A leadership change (a reassignment, a preferred-leader election, a failover) leaves a
partition without a listening leader for a moment. Like a Kafka producer (``retries``,
``retry.backoff.ms``, ``delivery.timeout.ms``), the client retries the failures that cannot
have stored the record, with a short doubling backoff, until ``delivery_timeout_s`` has passed
since the first attempt. Everything else reaches the caller at once.

- ``no_responders``: nothing listened on the subject, so nothing was appended. Always retried.
- ``not_leader``: usually refused before the append, but a leader that loses its leadership
  also fails the acks=all publishes parked waiting for the high watermark, which it had
  appended and which the new leader may hold. Retried only when the publish carries a
  ``Nats-Msg-Id``: the new leader then acks the copy it holds as a duplicate.
- ``timeout`` (no ack in time): the record may have been appended. Retried only with a
  ``Nats-Msg-Id``, for the same reason.
- ``not_enough_replicas``, ``stream_paused``, ``record_too_large`` and the rest: never;
  ``not_enough_replicas`` can be reported after the append, the others need the operator.
"""

from __future__ import annotations

from spark_log.errors import (
    LiftlogError,
    NoRespondersError,
    NotLeaderError,
    RequestTimeoutError,
)

DEFAULT_DELIVERY_TIMEOUT_S = 30.0
"""Kafka's ``delivery.timeout.ms`` is 120 s; a leadership change here takes well under a
second, so 30 s bounds a publish that cannot succeed without hiding a real outage long."""
INITIAL_BACKOFF_S = 0.05
MAX_BACKOFF_S = 1.0


def is_retriable(exc: LiftlogError, has_msg_id: bool) -> bool:
    """Whether publishing again cannot store the record twice (see the module docstring)."""
    if isinstance(exc, NoRespondersError):
        return True
    if isinstance(exc, NotLeaderError | RequestTimeoutError):
        return has_msg_id
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
