"""A Liftbridge ``CreateStreamRequest`` as a Liftlog stream spec, or the field that cannot be.

Liftbridge reads a zero as "the default" in several places (replication factor, partitions,
retention, auto-pause), and so does this mapping; a field Liftlog has no per-stream setting
for is refused with INVALID_ARGUMENT naming it, never ignored (docs/liftbridge.md lists them).
"""

from __future__ import annotations

import re

from spark_log.errors import InvalidRequestError
from spark_log.liftbridge import api_pb2 as pb
from spark_log.stream_spec import StreamSpec

EVERY_LIVE_BROKER = -1
"""Liftbridge's replication factor for "a replica on every broker"."""

# Liftbridge reads 0 in these as its own default (commitlog defaults), so a client that sends
# the wrapper with 0 asks for nothing Liftlog must honour; any other value is refused.
_ZERO_IS_DEFAULT = ("cleanerInterval", "segmentMaxBytes", "compactMaxGoroutines")
_UNSUPPORTED = {
    "cleanerInterval": "retention runs on every node's log.retention_check_interval_ms",
    "segmentMaxBytes": "segment size is every node's log.segment_bytes",
    "segmentMaxAge": "segment age is every node's log.segment_ms",
    "compactMaxGoroutines": "key compaction runs in the lake (`liftlog compact`)",
}
# 0 means "no limit" (retention) or "never" (auto-pause) to Liftbridge: None in a spec
_ZERO_IS_NONE = {
    "retentionMaxBytes": "retention_bytes",
    "retentionMaxMessages": "retention_messages",
    "retentionMaxAge": "retention_ms",
    "autoPauseTime": "auto_pause_ms",
}
_FLAGS = {
    "compactEnabled": "compaction",
    "autoPauseDisableIfSubscribers": "auto_pause_disable_if_subscribers",
    "optimisticConcurrencyControl": "optimistic_concurrency_control",
    "encryption": "encryption",
}
REQUEST_FIELD_BY_SPEC_FIELD = {
    "name": "name",
    "subject": "subject",
    "load_balance": "group",
    "replication_factor": "replicationFactor",
    "partitions": "partitions",
    "min_isr": "minIsr",
    **{spec: request for request, spec in _ZERO_IS_NONE.items()},
    **{spec: request for request, spec in _FLAGS.items()},
}
_JSON_FIELD = re.compile(r'"([a-z][a-z0-9_]*)"')


def spec_from_request(request: pb.CreateStreamRequest, live_brokers: int) -> StreamSpec:
    """The spec a create asks for; ``live_brokers`` counts the brokers a replication factor
    of -1 places a replica on. InvalidRequestError names the request's own field."""
    wrapped = wrapped_values(request)
    _refuse_unsupported(wrapped)
    if not request.name:
        raise InvalidRequestError("name is required")
    if not request.subject:
        raise InvalidRequestError("subject is required")
    fields: dict[str, object] = {
        "name": request.name,
        "subject": request.subject,
        "partitions": _partitions(request.partitions),
        "replication_factor": _replication_factor(request.replicationFactor, live_brokers),
        "load_balance": bool(request.group),
    }
    for request_field, spec_field in _ZERO_IS_NONE.items():
        if request_field in wrapped:
            fields[spec_field] = _zero_is_none(request_field, int(wrapped[request_field]))
    for request_field, spec_field in _FLAGS.items():
        if request_field in wrapped:
            fields[spec_field] = bool(wrapped[request_field])
    if "minIsr" in wrapped:
        fields["min_isr"] = _min_isr(int(wrapped["minIsr"]))
    try:
        spec = StreamSpec(**fields)  # type: ignore[arg-type]
    except InvalidRequestError as exc:
        raise InvalidRequestError(in_request_words(exc.message)) from exc
    _refuse_other_queue_group(request.group, spec)
    return spec


def in_request_words(message: str) -> str:
    """A spec error with its JSON field names (``"min_isr"``) turned into the request's
    (``minIsr``), so that a Liftbridge client reads the field it sent."""

    def rename(match: re.Match[str]) -> str:
        return REQUEST_FIELD_BY_SPEC_FIELD.get(match.group(1), match.group(0))

    return _JSON_FIELD.sub(rename, message)


def wrapped_values(request: pb.CreateStreamRequest) -> dict[str, int | bool]:
    """The Nullable* fields the request sets, by name, unwrapped (absent: not sent)."""
    return {
        descriptor.name: value.value
        for descriptor, value in request.ListFields()
        if descriptor.message_type is not None
    }


def _refuse_unsupported(wrapped: dict[str, int | bool]) -> None:
    for field, reason in _UNSUPPORTED.items():
        if field not in wrapped:
            continue
        if field in _ZERO_IS_DEFAULT and wrapped[field] == 0:
            continue
        raise InvalidRequestError(
            f"{field} is not a per-stream setting in Liftlog ({reason}): leave it unset"
        )


def _partitions(requested: int) -> int:
    if requested < 0:
        raise InvalidRequestError(f"partitions must be >= 0 (0: one partition), not {requested}")
    return requested or 1


def _replication_factor(requested: int, live_brokers: int) -> int:
    if requested == EVERY_LIVE_BROKER:
        return max(live_brokers, 1)
    if requested < 0:
        raise InvalidRequestError(
            f"replicationFactor must be -1 (every live broker), 0 (one replica) or positive, "
            f"not {requested}"
        )
    return requested or 1


def _refuse_other_queue_group(group: str, spec: StreamSpec) -> None:
    """A group makes the stream load-balanced. Liftlog's partitions share one queue group
    per stream, named after it; another name (which in Liftbridge would also share the
    subject's messages with the other streams of that group) cannot be honoured."""
    if group and group != spec.queue_group:
        raise InvalidRequestError(
            f"group {group!r} cannot be honoured: a load-balanced stream's partitions share "
            f"the NATS queue group {spec.queue_group!r}, which no other stream shares; "
            f"send group {spec.queue_group!r}, or no group"
        )


def _zero_is_none(field: str, value: int) -> int | None:
    if value < 0:
        raise InvalidRequestError(f"{field} must be >= 0 (0: none), not {value}")
    return value or None


def _min_isr(value: int) -> int:
    """Liftbridge's minIsr 0 sets no minimum, which the leader always meets: 1."""
    if value < 0:
        raise InvalidRequestError(f"minIsr must be >= 0, not {value}")
    return value or 1
