"""Turning a NATS message (or a REST publish) into a validated produce request.

Parsing runs on the partition's writer task, not in the NATS callback, so the callback stays a
single list append and the subscription never falls behind because of validation work.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from ingest.produce.arrow_guard import check_plain_type, refuse_compressed
from ingest.produce.envelope_acks import EnvelopeAck
from spark_log.api_models import DeadLetter
from spark_log.errors import InvalidRequestError, InvalidTimestampError, RecordTooLargeError
from spark_log.log import RECORD_SCHEMA
from spark_log.stream_spec import ACK_POLICIES, StreamSpec
from spark_log.wire import (
    BATCH_FORMAT_ARROW,
    HEADER_ACK,
    HEADER_BATCH,
    HEADER_EXPECTED_OFFSET,
    HEADER_KEY,
    HEADER_MSG_ID,
    HEADER_TIMESTAMP,
)

_HEADERS_TYPE = RECORD_SCHEMA.field("headers").type
MAX_OFFSET = 2**63 - 1
"""Offsets are int64 in every batch header and index."""
MAX_OFFSET_DIGITS = len(str(MAX_OFFSET))


@dataclass(frozen=True, slots=True)
class ProduceAck:
    """What a request that did not come from NATS (REST) is answered with: its first offset,
    its record count and whether ``Nats-Msg-Id`` found it a duplicate (nothing stored)."""

    offset: int
    count: int
    duplicate: bool = False
    dead_letter: DeadLetter | None = None
    """Set when the record was stored in the dead letter stream instead (offset -1)."""


@dataclass(slots=True)
class ProduceRequest:
    """One record, or one producer batch (``records`` set), waiting for its offset."""

    subject: str
    reply: str | None
    ack_policy: str
    msg_id: str | None
    expected_offset: int | None
    key: bytes | None = None
    value: bytes = b""
    headers: dict[str, str] | None = None
    records: pa.Table | None = None
    future: asyncio.Future[ProduceAck] | None = None
    timestamp_ms: int | None = None
    """The producer's create time (``timestamp_type: create`` and ``Liftlog-Timestamp``
    given); None: the leader's append time. A batch's records all take it."""
    received_s: float = 0.0
    """When the leader took the request in (its monotonic clock): the ack latency's start."""
    envelope: EnvelopeAck | None = None
    """A Liftbridge enveloped publish's answer (``reply`` is then its ack inbox, and acks and
    refusals leave as enveloped ``Ack``s); None: acks are Liftlog's JSON."""

    @property
    def count(self) -> int:
        return 1 if self.records is None else self.records.num_rows

    @property
    def size_bytes(self) -> int:
        return len(self.value) if self.records is None else self.records.nbytes


def request_from_nats(
    subject: str, reply: str, data: bytes, headers: dict[str, str] | None, spec: StreamSpec
) -> ProduceRequest:
    """Validate a plain NATS message; raise a typed error to be sent back as an error ack.
    (A payload in Liftbridge's envelope is taken in by ``ingest.produce.envelope_intake``.)"""
    hdrs = headers or {}
    req = ProduceRequest(
        subject=subject,
        reply=reply or None,
        ack_policy=_ack_policy(hdrs.get(HEADER_ACK), spec),
        msg_id=hdrs.get(HEADER_MSG_ID) or None,
        expected_offset=_expected_offset(hdrs.get(HEADER_EXPECTED_OFFSET)),
        timestamp_ms=create_timestamp(hdrs, spec),
    )
    if hdrs.get(HEADER_BATCH) is not None:
        req.records = _decode_producer_batch(hdrs[HEADER_BATCH], data, spec)
        return req
    check_record_size(len(data), spec)
    key = hdrs.get(HEADER_KEY)
    req.key = key.encode() if key is not None else None
    req.value = data
    req.headers = headers or None
    return req


def local_request(
    subject: str,
    ack_policy: str,
    *,
    key: bytes | None = None,
    value: bytes = b"",
    headers: dict[str, str] | None = None,
    records: pa.Table | None = None,
    expected_offset: int | None = None,
) -> ProduceRequest:
    """A request that did not come from NATS (REST, gRPC): no reply subject, no dedup; a
    compare-and-set only when ``expected_offset`` is given."""
    return ProduceRequest(
        subject=subject,
        reply=None,
        ack_policy=ack_policy,
        msg_id=None,
        expected_offset=expected_offset,
        key=key,
        value=value,
        headers=headers,
        records=records,
    )


def check_record_size(size: int, spec: StreamSpec) -> None:
    if size > spec.max_record_bytes:
        raise RecordTooLargeError(
            f"record of {size} bytes exceeds max_record_bytes {spec.max_record_bytes}"
        )


def decode_arrow_stream(data: bytes, what: str) -> pa.Table:
    """The table an Arrow IPC stream holds, validated in full: a crafted stream can declare
    offsets pointing outside its buffers, which Arrow reads unchecked (a crash, not an error)
    unless validated before anything touches the values."""
    refuse_compressed(data, what)
    try:
        table = pa.ipc.open_stream(pa.py_buffer(data)).read_all()
        table.validate(full=True)
    except (pa.ArrowException, OSError, EOFError) as exc:
        raise InvalidRequestError(f"{what} is not a valid Arrow IPC stream: {exc}") from exc
    return table


def ack_policy_or_default(value: str | None, spec: StreamSpec) -> str:
    return _ack_policy(value, spec)


def _ack_policy(value: str | None, spec: StreamSpec) -> str:
    if value is None:
        return spec.ack_policy
    policy = value.strip().lower()
    if policy not in ACK_POLICIES:
        raise InvalidRequestError(f"{HEADER_ACK} must be one of none, leader, all; got {value!r}")
    return policy


def create_timestamp(headers: dict[str, str] | None, spec: StreamSpec) -> int | None:
    """The record's create time from ``Liftlog-Timestamp`` on a ``timestamp_type: create``
    stream (None without the header, and always None on a ``log_append`` stream, which
    ignores the header as Kafka's LogAppendTime topics ignore the producer's time). Whether
    it is close enough to the leader's clock is checked when the record is sequenced."""
    if spec.timestamp_type != "create" or not headers:
        return None
    value = headers.get(HEADER_TIMESTAMP)
    if value is None:
        return None
    text = value.strip()
    if not (text.isascii() and text.isdigit()) or len(text) > MAX_OFFSET_DIGITS:
        raise InvalidTimestampError(
            f"{HEADER_TIMESTAMP} must be milliseconds since the epoch (digits 0-9), "
            f"got {value[:40]!r}"
        )
    timestamp = int(text)
    if timestamp > MAX_OFFSET:
        raise InvalidTimestampError(f"{HEADER_TIMESTAMP} must be at most {MAX_OFFSET}")
    return timestamp


def _expected_offset(value: str | None) -> int | None:
    """An offset in ASCII digits (spaces around allowed): ``int()`` alone would also take
    ``+7``, ``1_000`` and non-ASCII digits, and numbers past any offset a log can reach."""
    if value is None:
        return None
    text = value.strip()
    if not (text.isascii() and text.isdigit()) or len(text) > MAX_OFFSET_DIGITS:
        raise InvalidRequestError(
            f"{HEADER_EXPECTED_OFFSET} must be an offset (digits 0-9), got {value[:40]!r}"
        )
    offset = int(text)
    if offset > MAX_OFFSET:
        raise InvalidRequestError(f"{HEADER_EXPECTED_OFFSET} must be at most {MAX_OFFSET}")
    return offset


def _decode_producer_batch(fmt: str, data: bytes, spec: StreamSpec) -> pa.Table:
    if fmt.strip().lower() != BATCH_FORMAT_ARROW:
        raise InvalidRequestError(
            f"{HEADER_BATCH} format {fmt[:40]!r} is not supported; use 'arrow'"
        )
    return normalize_batch_table(decode_arrow_stream(data, "producer batch"), spec)


def normalize_batch_table(table: pa.Table, spec: StreamSpec) -> pa.Table:
    """Check a producer batch's columns (``value`` required; ``key``, ``headers`` optional)."""
    if table.num_rows == 0:
        raise InvalidRequestError("producer batch is empty")
    names = table.column_names
    unknown = set(names) - {"key", "value", "headers"}
    if unknown or "value" not in names or len(set(names)) != len(names):
        raise InvalidRequestError(
            f"producer batch columns must be value and optionally key, headers; "
            f"got {table.column_names}"
        )
    for field in table.schema:
        check_plain_type(field.name, field.type)
    n = table.num_rows
    try:
        value = table.column("value").cast(pa.binary())
        key = (
            table.column("key").cast(pa.binary())
            if "key" in table.column_names
            else pa.nulls(n, pa.binary())
        )
        headers = (
            table.column("headers").cast(_HEADERS_TYPE)
            if "headers" in table.column_names
            else pa.nulls(n, _HEADERS_TYPE)
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise InvalidRequestError(f"producer batch has a column of the wrong type: {exc}") from exc
    if value.null_count:
        raise InvalidRequestError("producer batch has null values")
    _check_header_entries(headers)
    check_record_size(pc.max(pc.binary_length(value)).as_py() or 0, spec)
    return pa.table({"key": key, "value": value, "headers": headers})


def _check_header_entries(headers: pa.ChunkedArray) -> None:
    """A row may have no headers (a null list), but every header it has needs a name and a
    value: a stored null one would break every later fetch of the record."""
    entries = pc.list_flatten(headers)
    if entries.null_count:
        raise InvalidRequestError("producer batch has a null header entry")
    for index, part in enumerate(("name", "value")):
        if pc.struct_field(entries, [index]).null_count:
            raise InvalidRequestError(f"producer batch has a header with a null {part}")
