"""A REST publish in and out: the body (JSON records or an Arrow IPC stream) as produce
requests, and the produce acks as the ``PublishResult`` answer.

Both bodies become the ``ProduceRequest``s a NATS publish becomes, with the same checks
(record size, ``create`` timestamps), so a record is stored alike whichever way it arrived.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses

from fastapi import Request
from pydantic import ValidationError

from ingest.api.models import PublishBody, PublishRecord
from ingest.produce.request import (
    ProduceAck,
    ProduceRequest,
    check_record_size,
    create_timestamp,
    decode_arrow_stream,
    local_request,
    normalize_batch_table,
)
from spark_log.api_models import PublishResult
from spark_log.errors import InvalidRequestError, RequestTooLargeError
from spark_log.stream_spec import StreamSpec
from spark_log.wire import ARROW_STREAM_MEDIA_TYPE, HEADER_KEY


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The publish body; BodyLimitMiddleware bounds it already, this keeps the route safe
    wherever it is mounted."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise RequestTooLargeError(
                f"request body is over limits.max_request_bytes ({max_bytes} bytes)"
            )
        chunks.append(chunk)
    return b"".join(chunks)


def produce_requests(
    data: bytes, content_type: str, encoding: str, spec: StreamSpec, subject: str, policy: str
) -> list[ProduceRequest]:
    """An Arrow IPC body is one batch request; a JSON body is one request per record."""
    if content_type.startswith(ARROW_STREAM_MEDIA_TYPE):
        return [_arrow_request(data, spec, subject, policy)]
    body = _parse_json_body(data)
    return [_json_request(r, encoding, spec, subject, policy) for r in body.records]


def publish_result(stream: str, partition: int, acks: list[ProduceAck]) -> PublishResult:
    """The REST publish answer: every record's offset, and ``duplicate`` when the produce
    path found every request already written (nothing new was stored). A record stored in
    the dead letter stream instead has offset -1 and is described in ``dead_letters``."""
    offsets = tuple(ack.offset + i for ack in acks for i in range(ack.count))
    duplicate = bool(acks) and all(ack.duplicate for ack in acks)
    dead = tuple(
        dataclasses.replace(ack.dead_letter, index=index)
        for index, ack in enumerate(acks)
        if ack.dead_letter is not None
    )
    return PublishResult(stream, partition, offsets, duplicate, dead)


def _parse_json_body(data: bytes) -> PublishBody:
    if not data:
        raise InvalidRequestError('send a JSON body {"records": [...]} or an Arrow IPC stream')
    try:
        return PublishBody.model_validate_json(data)
    except ValidationError as exc:
        parts = [
            f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors()
        ]
        raise InvalidRequestError("; ".join(parts)) from exc


def _json_request(
    record: PublishRecord, encoding: str, spec: StreamSpec, subject: str, policy: str
) -> ProduceRequest:
    value = _decode(record.value, encoding, "value") or b""
    check_record_size(len(value), spec)
    key = _decode(record.key, encoding, "key")
    headers = dict(record.headers or {})
    if key is not None:
        headers.setdefault(HEADER_KEY, key.decode("utf-8", "replace"))
    req = local_request(subject, policy, key=key, value=value, headers=headers or None)
    req.timestamp_ms = create_timestamp(headers, spec)  # a record's Liftlog-Timestamp header
    return req


def _arrow_request(data: bytes, spec: StreamSpec, subject: str, policy: str) -> ProduceRequest:
    table = normalize_batch_table(decode_arrow_stream(data, "body"), spec)
    return local_request(subject, policy, records=table)


def _decode(text: str | None, encoding: str, what: str) -> bytes | None:
    if text is None:
        return None
    if encoding == "utf-8":
        try:
            return text.encode()
        except UnicodeEncodeError as exc:  # a lone surrogate (JSON's "\ud800")
            raise InvalidRequestError(f"{what} is not valid UTF-8 text") from exc
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidRequestError(
            f"{what} is not valid base64 (use encoding=utf-8 for text)"
        ) from exc
