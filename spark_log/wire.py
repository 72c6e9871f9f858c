"""Names and shapes that cross the wire: NATS headers, ack JSON, media types.

Keys and per-record options travel in NATS headers so plain NATS publishers need no envelope;
acks are small JSON documents on the message's reply subject.
"""

from __future__ import annotations

import json

from spark_log import errors as errors_module
from spark_log.errors import InvalidRequestError, LiftlogError
from spark_log.json_types import JsonObject

HEADER_KEY = "Liftlog-Key"
HEADER_ACK = "Liftlog-Ack"
HEADER_MSG_ID = "Nats-Msg-Id"
HEADER_EXPECTED_OFFSET = "Liftlog-Expected-Offset"
HEADER_BATCH = "Liftlog-Batch"
HEADER_BATCH_COUNT = "Liftlog-Batch-Count"
# a record's create time (ms since the epoch) on a stream with timestamp_type "create"
HEADER_TIMESTAMP = "Liftlog-Timestamp"
# the principal a Liftlog client logged in to NATS as: the node checks its publish ACL
HEADER_PRINCIPAL = "Liftlog-Principal"
BATCH_FORMAT_ARROW = "arrow"

ARROW_STREAM_MEDIA_TYPE = "application/vnd.apache.arrow.stream"


def _core_errors() -> dict[str, type[LiftlogError]]:
    """Every typed error of the core, by code (the codes REST bodies and acks carry)."""
    found: dict[str, type[LiftlogError]] = {}
    pending = list(LiftlogError.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.__module__ == errors_module.__name__:
            found.setdefault(cls.code, cls)
    return found


_ERRORS_BY_CODE = _core_errors()


def ack_prefix(stream: str, partition: int) -> bytes:
    """The constant start of every ack of one partition, encoded once per replica."""
    return f'{{"stream":{json.dumps(stream)},"partition":{partition},"offset":'.encode()


def encode_ack(prefix: bytes, offset: int, count: int | None = None) -> bytes:
    """Ack JSON ``{"stream","partition","offset"}`` (a batch adds ``count``), built fast."""
    if count is None:
        return prefix + b"%d}" % offset
    return prefix + b'%d,"count":%d}' % (offset, count)


def encode_duplicate_ack(prefix: bytes, offset: int, count: int | None = None) -> bytes:
    """Ack of a publish deduplicated by ``Nats-Msg-Id``: the original offset (and ``count``)
    plus ``"duplicate": true``, as JetStream says it. Kept apart from ``encode_ack`` so the
    common, non-duplicate ack pays nothing for the flag."""
    if count is None:
        return prefix + b'%d,"duplicate":true}' % offset
    return prefix + b'%d,"count":%d,"duplicate":true}' % (offset, count)


def encode_error(
    error: LiftlogError, stream: str | None = None, partition: int | None = None
) -> bytes:
    """Error ack; ``stream``/``partition`` let a client tell apart streams sharing a subject."""
    body: JsonObject = error.to_json()
    if stream is not None:
        body = {"stream": stream, "partition": partition, **body}
    return json.dumps(body, separators=(",", ":")).encode()


def parse_ack(payload: bytes) -> JsonObject:
    """Parse an ack or error ack into a dict; raise only when it is not an ack at all."""
    try:
        data = json.loads(payload)
    except ValueError as exc:
        raise InvalidRequestError(f"malformed ack {payload[:200]!r}") from exc
    if not isinstance(data, dict):
        raise InvalidRequestError(f"malformed ack {payload[:200]!r}")
    return data


def decode_ack(payload: bytes) -> JsonObject:
    """Parse an ack; raise the typed error an error ack carries."""
    data = parse_ack(payload)
    if "error" in data:
        raise error_from_json(data["error"])
    return data


def error_from_json(error: object) -> LiftlogError:
    """Rebuild the typed error from ``{"code", "message"}`` (REST bodies and NATS acks)."""
    if not isinstance(error, dict):
        return LiftlogError(str(error))
    code = str(error.get("code", "internal_error"))
    cls = _ERRORS_BY_CODE.get(code, LiftlogError)
    err = cls(str(error.get("message", code)))
    err.code = code
    return err
