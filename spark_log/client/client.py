"""``spark_log.Client``: publish to streams over NATS, read them and administer them over REST.

Publishing goes straight to NATS (the stream's partition subject), so the client adds no hop:
the partition leader acks on a reply subject the client owns. Acks are matched to the stream
they came from, because several streams may record the same subject and each one acks.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import time
from collections.abc import AsyncGenerator, Iterable, Mapping
from typing import NoReturn

import pyarrow as pa
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from spark_log.api_models import (
    Ack,
    ClusterInfo,
    DeadLetter,
    FlushResult,
    ReassignmentStatus,
    StreamDescription,
    StreamList,
    StreamSummary,
)
from spark_log.client.async_http import AsyncHttp
from spark_log.client.auth_admin import AuthAdminMixin
from spark_log.client.credentials import ClientCredentials, rest_credentials
from spark_log.client.cursors import CursorMixin
from spark_log.client.decoded import DecodedRecord
from spark_log.client.fetched import Fetched
from spark_log.client.group_consumer import (
    DEFAULT_GROUP_FETCH_RECORDS,
    DEFAULT_GROUP_WAIT_MS,
    GroupConsumer,
    RebalanceCallback,
)
from spark_log.client.nats_connect import DEFAULT_NATS_CONNECT_TIMEOUT_S, connect_nats
from spark_log.client.nats_login import nats_login
from spark_log.client.positions import (
    STOP_LATEST,
    Cursor,
    Start,
    StartName,
    Stop,
    StopBounds,
    check_order,
    check_start,
    check_stop,
    earlier_end,
    start_timestamp_ms,
    stop_bounds,
)
from spark_log.client.publish_retry import (
    DEFAULT_DELIVERY_TIMEOUT_S,
    possibly_stored,
    retry_delay,
    stored_nothing,
)
from spark_log.client.rest import RestClient, RestResponse, error_from_response
from spark_log.client.schema_registry import LatestSchema, RegistryClient
from spark_log.client.typed_values import (
    binding_of,
    decode_unframed,
    is_raw,
    raw_bytes,
    serialize,
)
from spark_log.errors import (
    CursorNotFoundError,
    ForbiddenError,
    InvalidRequestError,
    LiftlogError,
    NoRespondersError,
    NotLeaderError,
    RequestTimeoutError,
    UnavailableError,
)
from spark_log.json_types import JsonMapping, JsonObject
from spark_log.log import Record
from spark_log.log.fetch_table import records_of_fetch_table
from spark_log.nats_config import NatsCredentials
from spark_log.nats_io import widen_read_buffer
from spark_log.nats_options import nats_auth_options
from spark_log.partitioner import partition_for_key
from spark_log.schemas import ParsedSchema, SchemaNotFoundError, SchemaViolationError, unframe
from spark_log.stream_spec import StreamSpec
from spark_log.wire import (
    ARROW_STREAM_MEDIA_TYPE,
    BATCH_FORMAT_ARROW,
    HEADER_ACK,
    HEADER_BATCH,
    HEADER_EXPECTED_OFFSET,
    HEADER_KEY,
    HEADER_MSG_ID,
    HEADER_PRINCIPAL,
    error_from_json,
    parse_ack,
)

DEFAULT_ACK_TIMEOUT_S = 10.0
DEFAULT_POLL_WAIT_MS = 1000
DEFAULT_FETCH_RECORDS = 1000
HTTP_ERROR = 400
MAX_IN_FLIGHT = 65536
DISCOVERED_NATS_RECONNECT_ATTEMPTS = 3
# a retry cut short by the delivery timeout still waits this long for its ack
MIN_RETRY_ACK_TIMEOUT_S = 0.05
DISCOVERED_NATS_RECONNECT_WAIT_S = 0.5
# A flush waits for the lake export on every partition's leader.
FLUSH_TIMEOUT_S = 120.0

# the status nats-server puts on the reply when no subscriber listens on the subject
NO_RESPONDERS_STATUS = "503"

__all__ = ["Ack", "Client", "Cursor", "Fetched", "Start", "Stop", "partition_for_key"]


class Client(AuthAdminMixin, CursorMixin):
    """Async client. Use ``async with Client(servers=...) as client:`` (``servers`` None:
    ``LIFTLOG_SERVER``, else the credentials file's ``server``, else ``DEFAULT_SERVER``).

    Token and ACL administration (``create_token``, ``add_acl``, ...) come from
    ``AuthAdminMixin``."""

    def __init__(
        self,
        servers: str | list[str] | None = None,
        nats_url: str | None = None,
        ack_timeout_s: float = DEFAULT_ACK_TIMEOUT_S,
        delivery_timeout_s: float | None = DEFAULT_DELIVERY_TIMEOUT_S,
        nats_credentials: NatsCredentials | None = None,
        token: str | None = None,
        credentials: ClientCredentials | None = None,
        connect_timeout_s: float = DEFAULT_NATS_CONNECT_TIMEOUT_S,
    ) -> None:
        # REST credentials: ``credentials`` (a token, a CA, a client certificate), ``token``
        # alone, or else LIFTLOG_TOKEN / LIFTLOG_*_FILE / LIFTLOG_CREDENTIALS_FILE
        self.rest = RestClient(servers, credentials=rest_credentials(token, credentials))
        self.schema_registry = RegistryClient(self.rest)
        """The nodes' schema registry (Confluent's API) over the same servers and credentials."""
        # fetches (which may wait at a partition's end) run on the loop, not on threads
        self._http = AsyncHttp(self.rest.credentials.ssl_context())
        self.nats_url = nats_url
        # None: from LIFTLOG_NATS_* (anonymous when unset); resolved now, so a bad setting
        # fails here rather than at the first publish
        self._nats_options = nats_auth_options(nats_login(nats_credentials, self.rest.credentials))
        """The NATS URL the user gave; None means: learn it from the cluster (again after the
        connection to a discovered server is lost)."""
        self._discovered_nats_url: str | None = None
        self.ack_timeout_s = ack_timeout_s
        self.connect_timeout_s = connect_timeout_s
        """How long connecting to NATS may take (a publish's first connection, and one after
        the last was lost for good) before NatsLoginError or NatsConnectError."""
        self.delivery_timeout_s = delivery_timeout_s
        """How long a publish keeps retrying failures that stored nothing (a leadership change:
        ``no_responders``; an ISR below min ISR: ``not_enough_replicas``; ``not_leader``, ack
        timeouts and ``not_enough_replicas_after_append`` too with a msg id), as Kafka's
        ``delivery.timeout.ms``; 0 or None hands every failure to the caller at once."""
        self._nc: NatsClient | None = None
        self._owns_nc = False
        self._principal = ""  # who the token names, sent with every publish (node's check)
        self._specs: dict[str, StreamSpec] = {}
        self._leaders: dict[tuple[str, int], str] = {}
        self._round_robin: dict[str, itertools.count[int]] = {}
        self._inbox = ""
        self._waiting: dict[str, _Waiting] = {}
        self._next_reply = itertools.count()
        self._in_flight = asyncio.Semaphore(MAX_IN_FLIGHT)
        self._spec_lock = asyncio.Lock()
        self._connect_lock = asyncio.Lock()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        for *_where, fut in self._waiting.values():
            if not fut.done():
                fut.cancel()
        self._waiting.clear()
        await self._http.close()
        if self._nc is not None and self._owns_nc and not self._nc.is_closed:
            await self._nc.drain()
        self._nc = None

    # ----------------------------------------------------------------- admin (REST)

    async def create_stream(self, name: str, subject: str, **options: object) -> StreamDescription:
        """Create a stream (idempotent for an identical spec); returns its description."""
        body = {"name": name, "subject": subject, **options}
        resp = await asyncio.to_thread(self.rest.request, "POST", "/v1/streams", json_body=body)
        self._specs.pop(name, None)
        return StreamDescription.from_json(resp.json())

    async def delete_stream(self, name: str) -> None:
        await asyncio.to_thread(self.rest.request, "DELETE", f"/v1/streams/{name}")
        self.forget_stream(name)

    async def list_streams(self) -> list[StreamSummary]:
        body = await asyncio.to_thread(self.rest.get_json, "/v1/streams")
        return list(StreamList.from_json(body).streams)

    async def describe_stream(self, name: str) -> StreamDescription:
        body = await asyncio.to_thread(self.rest.get_json, f"/v1/streams/{name}")
        return StreamDescription.from_json(body)

    async def pause_stream(self, name: str) -> StreamDescription:
        resp = await asyncio.to_thread(self.rest.request, "POST", f"/v1/streams/{name}/pause")
        return StreamDescription.from_json(resp.json())

    async def resume_stream(self, name: str) -> StreamDescription:
        resp = await asyncio.to_thread(self.rest.request, "POST", f"/v1/streams/{name}/resume")
        return StreamDescription.from_json(resp.json())

    async def set_read_only(self, name: str, read_only: bool = True) -> StreamDescription:
        """Make every publish to the stream fail with ``StreamReadOnlyError`` (nothing is
        stored; reads go on), or, with ``read_only=False``, accept publishes again."""
        action = "readonly" if read_only else "readwrite"
        resp = await asyncio.to_thread(self.rest.request, "POST", f"/v1/streams/{name}/{action}")
        return StreamDescription.from_json(resp.json())

    async def alter_stream(self, name: str, **changes: object) -> StreamDescription:
        """Change alterable spec fields (``retention_ms=...``, ``min_isr=...``; ``None``
        clears a limit); every node applies them without a restart."""
        resp = await asyncio.to_thread(
            self.rest.request, "PATCH", f"/v1/streams/{name}", json_body=changes
        )
        self.forget_stream(name)  # the cached spec (max record size) is stale now
        return StreamDescription.from_json(resp.json())

    async def flush_stream(self, name: str) -> FlushResult:
        """Seal, fsync and export every partition to the lake; returns once the lake holds
        everything committed now (per-partition ``lake_offset``; the table in ``lake``)."""
        resp = await asyncio.to_thread(
            self.rest.request,
            "POST",
            f"/v1/streams/{name}/flush",
            timeout_s=FLUSH_TIMEOUT_S,
        )
        return FlushResult.from_json(resp.json())

    async def reassign(
        self, stream: str, targets: Mapping[int, Iterable[int]]
    ) -> ReassignmentStatus:
        """Move partitions' replicas (``{partition: [broker, ...]}``, the first the preferred
        leader); the controller carries it out. Returns the pending moves right after."""
        body = {
            "partitions": [
                {"partition": partition, "replicas": list(replicas)}
                for partition, replicas in sorted(targets.items())
            ]
        }
        path = f"/v1/streams/{stream}/reassign"
        resp = await asyncio.to_thread(self.rest.request, "POST", path, json_body=body)
        return ReassignmentStatus.from_json(resp.json())

    async def reassignment_status(self, stream: str) -> ReassignmentStatus:
        """The stream's pending reassignments and the phase each is in."""
        body = await asyncio.to_thread(self.rest.get_json, f"/v1/streams/{stream}/reassign")
        return ReassignmentStatus.from_json(body)

    async def cancel_reassignment(
        self, stream: str, partition: int | None = None
    ) -> ReassignmentStatus:
        """Cancel the pending reassignment of ``partition`` (every pending one of the stream
        when None): each goes back to its original replicas. NoReassignmentError when nothing
        is pending."""
        params = {} if partition is None else {"partition": partition}
        resp = await asyncio.to_thread(
            self.rest.request, "DELETE", f"/v1/streams/{stream}/reassign", params=params
        )
        return ReassignmentStatus.from_json(resp.json())

    async def cluster(self) -> ClusterInfo:
        """The live brokers (REST and NATS URLs) and the controller."""
        return ClusterInfo.from_json(await asyncio.to_thread(self.rest.get_json, "/v1/cluster"))

    # ----------------------------------------------------------------- publish (NATS)

    async def publish(
        self,
        stream: str,
        value: object,
        *,
        key: bytes | str | None = None,
        headers: Mapping[str, str] | None = None,
        partition: int | None = None,
        ack_policy: str | None = None,
        msg_id: str | None = None,
        expected_offset: int | None = None,
        timeout_s: float | None = None,
    ) -> Ack | None:
        """Publish one record; returns its Ack (None with ``ack_policy="none"``).

        ``value``: bytes, or text (sent as UTF-8), unchanged; or, on a stream bound to a value
        schema, any other value (a dict, list, number, bool, dataclass), serialised with the
        subject's latest schema in Confluent's wire format (see ``serialize_value``). A value
        the schema refuses raises SchemaViolationError before anything is sent.
        """
        spec = await self._spec(stream)
        payload = await self._value_bytes(spec, value)
        key_b = raw_bytes(key) if key is not None else None
        p = self._choose_partition(spec, key_b, partition)
        hdrs = dict(headers or {})
        if key_b is not None:
            hdrs[HEADER_KEY] = key_b.decode("utf-8", "replace")
        _set_options(hdrs, ack_policy, msg_id, expected_offset)
        ack = await self._send(spec, p, payload, hdrs, ack_policy, timeout_s)
        return None if ack is None else ack_from_wire(stream, ack, 1)

    async def publish_batch(
        self,
        stream: str,
        values: Iterable[object],
        *,
        keys: Iterable[bytes | str | None] | None = None,
        headers: Iterable[Mapping[str, str] | None] | None = None,
        partition: int | None = None,
        ack_policy: str | None = None,
        msg_id: str | None = None,
        timeout_s: float | None = None,
    ) -> Ack | None:
        """Publish many records as one NATS message (an Arrow IPC batch) with one ack.

        All records go to one partition: ``partition``, else the first key's, else round robin.
        Values as ``publish`` takes them; one the schema refuses fails the whole batch before
        anything is sent.
        """
        given = list(values)
        if not given:
            raise InvalidRequestError("publish_batch needs at least one value")
        spec = await self._spec(stream)
        value_list = [await self._value_bytes(spec, v) for v in given]
        key_list = (
            [raw_bytes(k) if k is not None else None for k in keys] if keys is not None else None
        )
        first_key = key_list[0] if key_list else None
        p = self._choose_partition(spec, first_key, partition)
        payload = encode_producer_batch(value_list, key_list, headers)
        hdrs = {HEADER_BATCH: BATCH_FORMAT_ARROW}
        _set_options(hdrs, ack_policy, msg_id, None)
        ack = await self._send(spec, p, payload, hdrs, ack_policy, timeout_s)
        return None if ack is None else ack_from_wire(stream, ack, len(value_list))

    async def publish_table(
        self,
        stream: str,
        table: pa.Table,
        *,
        partition: int,
        ack_policy: str | None = None,
        msg_id: str | None = None,
        timeout_s: float | None = None,
    ) -> Ack | None:
        """Publish an Arrow table (``value``, optional ``key`` and ``headers`` columns) as one
        producer batch to ``partition``: for callers that already hold Arrow columns (the
        Spark sink), no per-record conversion at all."""
        if table.num_rows == 0:
            raise InvalidRequestError("publish_table needs at least one row")
        spec = await self._spec(stream)
        p = self._choose_partition(spec, None, partition)
        hdrs = {HEADER_BATCH: BATCH_FORMAT_ARROW}
        _set_options(hdrs, ack_policy, msg_id, None)
        ack = await self._send(spec, p, encode_arrow_table(table), hdrs, ack_policy, timeout_s)
        return None if ack is None else ack_from_wire(stream, ack, table.num_rows)

    async def stream_spec(self, stream: str) -> StreamSpec:
        """The stream's spec (cached after the first describe)."""
        return await self._spec(stream)

    async def serialize_value(self, stream: str, value: object) -> bytes:
        """``value`` as a typed publish to ``stream`` writes it: serialised with the latest
        version of the stream's subject and framed with its id (Confluent's wire format), text
        too (``publish`` sends text unchanged). InvalidRequestError on an unbound stream,
        SchemaViolationError (naming the field) for a value the schema refuses."""
        return await self._serialized(await self._spec(stream), value)

    async def decode_value(self, stream: str, value: bytes) -> object:
        """A stored value of ``stream`` decoded: a framed one (Confluent's wire format) by the
        schema its id names (fetched once per id), an unframed one of a bound stream as plain
        JSON. On an unbound stream a value that is not framed by a registered schema comes back
        as its bytes. SchemaViolationError when a bound stream's value does not decode."""
        binding = (await self._spec(stream)).value_schema
        framed = unframe(value)
        if framed is None:
            return value if binding is None else decode_unframed(value)
        schema_id, payload = framed
        try:
            parsed = await self._schema_by_id(schema_id)
            return parsed.decode(payload)
        except (SchemaNotFoundError, SchemaViolationError):
            if binding is None:
                return value  # bytes that only look framed
            raise

    async def _value_bytes(self, spec: StreamSpec, value: object) -> bytes:
        """What ``publish`` sends for ``value``: bytes and text unchanged, any other value
        serialised with the stream's schema."""
        return raw_bytes(value) if is_raw(value) else await self._serialized(spec, value)

    async def _serialized(self, spec: StreamSpec, value: object) -> bytes:
        binding = binding_of(spec.name, spec.value_schema, value)
        latest = await self._latest_schema(binding.subject)
        return serialize(spec.name, binding, latest, value)

    async def _latest_schema(self, subject: str) -> LatestSchema:
        """The subject's latest version: cached a short while, read in a thread when not."""
        cached = self.schema_registry.cached_latest(subject)
        if cached is not None:
            return cached
        return await asyncio.to_thread(self.schema_registry.latest, subject)

    async def _schema_by_id(self, schema_id: int) -> ParsedSchema:
        cached = self.schema_registry.cached_by_id(schema_id)
        if cached is not None:
            return cached
        return await asyncio.to_thread(self.schema_registry.parsed_by_id, schema_id)

    async def _decoded(self, stream: str, records: list[Record]) -> list[Record]:
        """``records`` as DecodedRecords (``decode=True`` of fetch and subscribe)."""
        return [DecodedRecord.of(r, await self.decode_value(stream, r.value)) for r in records]

    async def max_payload(self) -> int:
        """The largest NATS message the server accepts (what one producer batch may be)."""
        return int((await self._nats()).max_payload)

    async def _send(
        self,
        spec: StreamSpec,
        partition: int,
        payload: bytes,
        headers: dict[str, str],
        ack_policy: str | None,
        timeout_s: float | None,
    ) -> JsonObject | None:
        """Publish and wait for the ack, retrying what ``spark_log.client.publish_retry`` allows
        within ``delivery_timeout_s``: a leadership change then costs latency, not errors."""
        has_msg_id = HEADER_MSG_ID in headers
        started = time.monotonic()
        attempt = 0
        # an earlier try that may have appended (a timeout, not_leader, ...): the caller must
        # not be told "nothing stored" by a later try's refusal
        maybe_stored: LiftlogError | None = None
        while True:
            try:
                return await self._send_once(
                    spec, partition, payload, headers, ack_policy, timeout_s
                )
            except LiftlogError as exc:
                attempt += 1
                delay = retry_delay(
                    exc,
                    has_msg_id=has_msg_id,
                    attempt=attempt,
                    elapsed_s=time.monotonic() - started,
                    delivery_timeout_s=self.delivery_timeout_s,
                )
                if delay is None:
                    _raise_outcome(exc, maybe_stored)
                if not stored_nothing(exc):
                    maybe_stored = exc
            await asyncio.sleep(delay)
            # a retry waits for its ack no later than the delivery timeout (Kafka's bound on
            # the whole send, retries included)
            timeout_s = self._retry_timeout_s(timeout_s, time.monotonic() - started)

    def _retry_timeout_s(self, timeout_s: float | None, elapsed_s: float) -> float:
        """The ack timeout of a retry: the usual one, cut to what is left of the delivery
        timeout (``retry_delay`` only allows a retry while some is left)."""
        usual = timeout_s or self.ack_timeout_s
        left = (self.delivery_timeout_s or usual) - elapsed_s
        return max(min(usual, left), MIN_RETRY_ACK_TIMEOUT_S)

    async def _send_once(
        self,
        spec: StreamSpec,
        partition: int,
        payload: bytes,
        headers: dict[str, str],
        ack_policy: str | None,
        timeout_s: float | None,
    ) -> JsonObject | None:
        nc = await self._nats()
        subject = spec.partition_subject(partition)
        if self._principal:
            headers = {**headers, HEADER_PRINCIPAL: self._principal}
        if ack_policy == "none":
            await nc.publish(subject, payload, headers=headers or None)
            return None
        async with self._in_flight:
            loop = asyncio.get_running_loop()
            reply = f"{self._inbox}.{next(self._next_reply)}"
            fut: asyncio.Future[JsonObject] = loop.create_future()
            self._waiting[reply] = (spec.name, partition, subject, fut)
            timeout = timeout_s or self.ack_timeout_s
            # a timer handle is far cheaper than asyncio.wait_for on this hot path
            timer = loop.call_later(timeout, _expire, fut, spec.name, partition, subject, timeout)
            try:
                await nc.publish(subject, payload, reply=reply, headers=headers or None)
                return await fut
            finally:
                timer.cancel()
                self._waiting.pop(reply, None)

    async def _on_ack(self, msg: Msg) -> None:
        waiting = self._waiting.get(msg.subject)
        if waiting is None:
            return
        stream, partition, subject, fut = waiting
        if fut.done():
            return
        if _is_no_responders(msg):
            fut.set_exception(self._no_responders(stream, partition, subject))
            return
        try:
            ack = parse_ack(msg.data)
        except LiftlogError as exc:
            fut.set_exception(exc)
            return
        if ack.get("stream", stream) != stream:
            return  # another stream recording the same subject acked too
        if "error" in ack:
            fut.set_exception(error_from_json(ack["error"]))
        else:
            fut.set_result(ack)

    # ----------------------------------------------------------------- consume (REST)

    async def fetch(
        self,
        stream: str,
        partition: int = 0,
        offset: int | None = None,
        *,
        timestamp_ms: int | None = None,
        start: StartName | None = None,
        stop_offset: int | None = None,
        stop_timestamp_ms: int | None = None,
        max_records: int = DEFAULT_FETCH_RECORDS,
        wait_ms: int = 0,
        decode: bool = False,
    ) -> Fetched:
        """One fetch of committed records (Arrow on the wire), from ``offset``, the first
        record at or after ``timestamp_ms``, or a named ``start``; up to an optional stop.
        ``decode``: the records are DecodedRecords, ``decoded`` their value (``decode_value``)."""
        params = {
            "offset": offset,
            "timestamp": timestamp_ms,
            "start": start,
            "stop_offset": stop_offset,
            "stop_timestamp": stop_timestamp_ms,
            "max_records": max_records,
            "wait_ms": wait_ms,
        }
        path = f"/v1/streams/{stream}/partitions/{partition}/records"
        server = await self._leader_url(stream, partition)
        resp = await self._get_records(server, path, params, wait_ms)
        if resp.status >= HTTP_ERROR:
            error = error_from_response(resp.status, resp.body)
            if isinstance(error, NotLeaderError):
                self._leaders.pop((stream, partition), None)
            raise error
        records = decode_fetch_arrow(resp.body)
        if decode:
            records = await self._decoded(stream, records)
        hw = int(resp.headers.get("liftlog-high-watermark", "0"))
        ended = resp.headers.get("liftlog-end-reached") == "true"
        next_offset = resp.headers.get("liftlog-next-offset")
        if next_offset is not None:
            return Fetched(records, hw, int(next_offset), ended)
        if records:
            return Fetched(records, hw, records[-1].offset + 1, ended)
        return Fetched(records, hw, offset if offset is not None else hw, ended)

    async def subscribe(
        self,
        stream: str,
        partition: int = 0,
        start: Start = "earliest",
        *,
        stop: Stop | None = None,
        poll_wait_ms: int = DEFAULT_POLL_WAIT_MS,
        fetch_max_records: int = DEFAULT_FETCH_RECORDS,
        max_records: int | None = None,
        stop_at_end: bool = False,
        decode: bool = False,
    ) -> AsyncGenerator[Record, None]:
        """Yield committed records as they arrive, from a start position to a stop position.

        ``start``: ``"earliest"``, ``"latest"`` (the last committed record, inclusive),
        ``"new-only"`` (records committed after this call), an offset, or a datetime (the
        first record at or after it). ``stop``: an offset (inclusive), ``"latest"`` (the last
        record committed at this call, so it ends even while more are published), or a
        datetime (it ends before the first record stamped after it). Without a stop it
        follows the partition forever (a live tail). ``max_records`` ends it after that many
        records; ``stop_at_end`` is ``stop="latest"`` (both may be given: the first end wins).
        ``fetch_max_records`` only sizes each fetch. ``decode``: each record is a
        DecodedRecord, its ``decoded`` the value decoded by its schema (``decode_value``).
        """
        start = check_start(start)
        stop = check_stop(stop)
        check_order(start, stop)
        if max_records is not None and max_records < 0:
            raise InvalidRequestError(f"max_records must be >= 0, got {max_records}")
        offset = await self.start_offset(stream, partition, start)
        bounds = await self._stop_bounds(stream, partition, stop, stop_at_end)
        left = max_records
        while _wants_more(offset, bounds.end, left):
            limit = _fetch_limit(fetch_max_records, offset, bounds.end, left)
            try:
                fetched = await self.fetch(
                    stream,
                    partition,
                    offset,
                    max_records=limit,
                    wait_ms=poll_wait_ms,
                    stop_timestamp_ms=bounds.timestamp_ms,
                )
            except (NotLeaderError, UnavailableError):
                await asyncio.sleep(poll_wait_ms / 1000)
                continue
            records = fetched.records
            if decode:
                records = await self._decoded(stream, records)
            for record in records:  # the node sends at most `limit`
                yield record
            if left is not None:
                left -= len(fetched.records)
            offset = fetched.next_offset
            if fetched.end_reached:
                return

    def consume(
        self,
        group: str,
        streams: Iterable[str],
        *,
        auto_commit: bool = True,
        auto_commit_interval_s: float = 5.0,
        auto_offset_reset: str = "latest",
        session_timeout_ms: int | None = None,
        instance_id: str | None = None,
        on_assign: RebalanceCallback | None = None,
        on_revoke: RebalanceCallback | None = None,
        max_records: int = DEFAULT_GROUP_FETCH_RECORDS,
        wait_ms: int = DEFAULT_GROUP_WAIT_MS,
        client_id: str | None = None,
        decode: bool = False,
    ) -> GroupConsumer:
        """A member of consumer group ``group`` reading ``streams`` (see
        ``spark_log.client.group_consumer``); it joins on ``async with`` or the first
        ``async for``. ``decode``: each record's ``decoded`` holds its value decoded by its
        schema (``decode_value``)."""
        return GroupConsumer(
            self,
            group,
            streams,
            auto_commit=auto_commit,
            auto_commit_interval_s=auto_commit_interval_s,
            auto_offset_reset=auto_offset_reset,
            session_timeout_ms=session_timeout_ms,
            instance_id=instance_id,
            on_assign=on_assign,
            on_revoke=on_revoke,
            max_records=max_records,
            wait_ms=wait_ms,
            client_id=client_id,
            decode=decode,
        )

    async def start_offset(self, stream: str, partition: int, start: Start) -> int:
        """The offset ``start`` means now (see ``subscribe``); an offset is taken as given."""
        start = check_start(start)
        if isinstance(start, Cursor):
            resolved = await self._cursor_start(stream, partition, start)
            if isinstance(resolved, int):
                return resolved
            start = resolved
        if isinstance(start, int):
            return start
        if isinstance(start, dt.datetime):
            fetched = await self.fetch(
                stream, partition, timestamp_ms=start_timestamp_ms(start), max_records=1
            )
        else:
            fetched = await self.fetch(stream, partition, start=start, max_records=1)
        return _first_offset(fetched)

    async def _cursor_start(self, stream: str, partition: int, start: Cursor) -> int | StartName:
        """The offset after the cursor's, or its ``if_unset`` start when it was never set."""
        value = await self.fetch_cursor(start.cursor_id, stream, partition)
        if value is not None:
            return value + 1
        if start.if_unset is None:
            raise CursorNotFoundError(
                f"cursor {start.cursor_id!r} was never set on {stream}/{partition}"
            )
        return start.if_unset

    async def _stop_bounds(
        self, stream: str, partition: int, stop: Stop | None, stop_at_end: bool
    ) -> StopBounds:
        """``stop`` as fetch bounds; the HW is read once, here, when ``"latest"`` needs it."""
        hw = None
        if stop == STOP_LATEST or stop_at_end:
            # new-only reads nothing (it starts at the HW): only the HW is wanted here
            hw = (await self.fetch(stream, partition, start="new-only")).high_watermark
        bounds = stop_bounds(stop, hw)
        if not stop_at_end:
            return bounds
        return StopBounds(earlier_end(bounds.end, hw), bounds.timestamp_ms)

    # ----------------------------------------------------------------- plumbing

    async def _nats(self) -> NatsClient:
        if self._nc is not None and not self._nc.is_closed:
            return self._nc
        # one connection however many first publishes race here: a connection made by a
        # loser would never be closed and would reconnect forever once its server is gone
        async with self._connect_lock:
            return await self._connect_nats()

    async def _connect_nats(self) -> NatsClient:
        if self._nc is None or self._nc.is_closed:
            given = bool(self.nats_url)
            url = self.nats_url if self.nats_url else await self._discover_nats()
            widen_read_buffer()
            # bounded: a refused login or an untrusted certificate fails at once, no server
            # at all after connect_timeout_s (NatsLoginError, NatsConnectError)
            if given:
                self._nc = await connect_nats(
                    url,
                    self._nats_options,
                    timeout_s=self.connect_timeout_s,
                    on_error=self._on_nats_error,
                    max_reconnect_attempts=-1,
                )
            else:
                # a discovered server may be gone for good (its broker died): give up on
                # it after a few attempts, so the next call rediscovers from the cluster
                self._nc = await connect_nats(
                    url,
                    self._nats_options,
                    timeout_s=self.connect_timeout_s,
                    on_error=self._on_nats_error,
                    max_reconnect_attempts=DISCOVERED_NATS_RECONNECT_ATTEMPTS,
                    reconnect_time_wait=DISCOVERED_NATS_RECONNECT_WAIT_S,
                    closed_cb=self._on_discovered_nats_closed,
                )
            self._owns_nc = True
            self._principal = await self._logged_in_principal()
            self._inbox = self._nc.new_inbox()
            await self._nc.subscribe(f"{self._inbox}.*", cb=self._on_ack)
        return self._nc

    async def _logged_in_principal(self) -> str:
        """The principal the client's token names, or "" without a token (or when the
        cluster cannot say): publishes then name nobody."""
        if not self.rest.credentials.token:
            return ""
        try:
            return (await self.whoami()).principal
        except LiftlogError:
            return ""

    async def _on_nats_error(self, exc: Exception) -> None:
        """A publish NATS refused for want of permission fails its waiters at once with
        ``forbidden`` instead of timing out: the server never delivered it to a node."""
        subject = refused_publish_subject(exc)
        if subject is None:
            return
        error = ForbiddenError(
            f"NATS refused the publish on {subject!r}: this login may not publish there "
            "(the principal needs the publish ACL on the stream)"
        )
        for *where, fut in list(self._waiting.values()):
            if where[2] == subject and not fut.done():
                fut.set_exception(error)

    async def _discover_nats(self) -> str:
        self._discovered_nats_url = nats_url_from_cluster(await self.cluster())
        return self._discovered_nats_url

    async def _on_discovered_nats_closed(self) -> None:
        self._discovered_nats_url = None

    def _no_responders(self, stream: str, partition: int, subject: str) -> NoRespondersError:
        url = self.nats_url or self._discovered_nats_url
        return no_responders_error(stream, partition, subject, url)

    async def _spec(self, stream: str) -> StreamSpec:
        spec = self._specs.get(stream)
        if spec is not None:
            return spec
        async with self._spec_lock:  # many concurrent publishes, one describe
            spec = self._specs.get(stream)
            if spec is not None:
                return spec
            spec = self._specs[stream] = (await self.describe_stream(stream)).spec
        return spec

    async def _get_records(
        self, server: str | None, path: str, params: Mapping[str, object], wait_ms: int
    ) -> RestResponse:
        """The fetch's answer from ``server``, or (leader unknown) the first node that answers."""
        headers = {**self.rest.credentials.headers(), "Accept": ARROW_STREAM_MEDIA_TYPE}
        timeout_s = self.rest.timeout_s + wait_ms / 1000
        last: UnavailableError | None = None
        for base in [server] if server else self.rest.servers:
            try:
                return await self._http.get(base, path, params, headers, timeout_s)
            except UnavailableError as exc:
                last = exc
        raise UnavailableError(f"no Liftlog node answered ({', '.join(self.rest.servers)}): {last}")

    async def _leader_url(self, stream: str, partition: int) -> str | None:
        url = self._leaders.get((stream, partition))
        if url is not None:
            return url
        try:
            body = await self.describe_stream(stream)
            cluster = await self.cluster()
        except UnavailableError:
            return None
        urls = cluster.api_urls()
        for p in body.partitions:
            if p.leader in urls:
                self._leaders[(stream, p.partition)] = urls[p.leader]
        return self._leaders.get((stream, partition))

    def _choose_partition(self, spec: StreamSpec, key: bytes | None, partition: int | None) -> int:
        if partition is not None:
            if not 0 <= partition < spec.partitions:
                raise InvalidRequestError(f"stream {spec.name} has no partition {partition}")
            return partition
        if spec.partitions == 1:
            return 0
        if key is not None:
            return partition_for_key(key, spec.partitions)
        counter = self._round_robin.setdefault(spec.name, itertools.count())
        return next(counter) % spec.partitions

    def forget_stream(self, stream: str) -> None:
        """Drop what is cached of ``stream`` (its spec, its leaders): re-read on next use."""
        self._specs.pop(stream, None)
        for key in [k for k in self._leaders if k[0] == stream]:
            del self._leaders[key]


def nats_url_from_cluster(cluster: ClusterInfo) -> str:
    """The NATS URL a client learns from the cluster (a live broker's)."""
    if not cluster.brokers:
        raise UnavailableError("no live broker to learn the NATS URL from")
    return cluster.brokers[0].nats_url


def no_responders_error(
    stream: str, partition: int, subject: str, nats_url: str | None
) -> NoRespondersError:
    """What a publish that nobody answered (NATS no-responders) is told."""
    return NoRespondersError(
        f"nothing listens on {subject!r} for {stream}/{partition} on NATS "
        f"{nats_url or '(unknown URL)'}: check that the stream exists and that "
        f"partition {partition} has a live leader (`liftlog stream describe {stream}`), "
        "and that this client uses the same NATS server as the nodes"
    )


# what a publish waiting for its ack remembers: stream, partition, subject, the future
_Waiting = tuple[str, int, str, "asyncio.Future[JsonObject]"]
PUBLISH_VIOLATION = "permissions violation for publish to "


def refused_publish_subject(exc: BaseException) -> str | None:
    """The subject of nats-server's "Permissions Violation for Publish to ..." error."""
    text = str(exc)
    at = text.lower().find(PUBLISH_VIOLATION)
    if at < 0:
        return None
    return text[at + len(PUBLISH_VIOLATION) :].strip().strip("'\"")


def ack_from_wire(stream: str, body: JsonMapping, count: int = 1) -> Ack:
    """The typed ack from a decoded ack body (``spark_log.wire.decode_ack``); ``stream`` stands
    in when the body omits it, ``count`` when an old node's batch ack omits it."""
    # built directly: this runs once per publish, a generic model parse costs ~8x more
    return Ack(
        stream=str(body.get("stream", stream)),
        partition=int(body["partition"]),
        offset=int(body["offset"]),
        count=int(body.get("count", count)),
        duplicate=bool(body.get("duplicate", False)),
        dead_letter=_dead_letter(body.get("dead_letter")),
    )


def _dead_letter(body: object) -> DeadLetter | None:
    """Where a record of a typed stream went instead (rare: parsed only when present)."""
    return DeadLetter.from_json(body) if isinstance(body, Mapping) else None


def _raise_outcome(last: LiftlogError, maybe_stored: LiftlogError | None) -> NoReturn:
    """Give up with ``last``, unless it is a refusal of this try alone while an earlier try of
    the same publish may have appended (then that earlier, indeterminate error is the honest
    answer: a retry refused as ``stream_paused`` says nothing about the first try)."""
    if maybe_stored is not None and not possibly_stored(last):
        maybe_stored.add_note(f"the last retry then failed with {last.code}: {last}")
        raise maybe_stored from last
    raise last


def _is_no_responders(msg: Msg) -> bool:
    """nats-server's 503 status reply: nobody subscribes to the subject published to."""
    headers = getattr(msg, "headers", None) or {}
    return not msg.data and headers.get("Status") == NO_RESPONDERS_STATUS


def _expire(
    fut: asyncio.Future[JsonObject], stream: str, partition: int, subject: str, timeout: float
) -> None:
    if not fut.done():
        fut.set_exception(
            RequestTimeoutError(
                f"no ack from {stream}/{partition} on {subject!r} within {timeout}s "
                "(is the stream paused or its leader down?)"
            )
        )


def _wants_more(offset: int, end: int | None, left: int | None) -> bool:
    """A subscription goes on until its record budget or its end offset is used up."""
    return (left is None or left > 0) and (end is None or offset < end)


def _fetch_limit(batch: int, offset: int, end: int | None, left: int | None) -> int:
    """Records to ask for: never past the end offset or the remaining budget."""
    limit = batch
    if end is not None:
        limit = min(limit, end - offset)
    if left is not None:
        limit = min(limit, left)
    return max(1, limit)


def _first_offset(fetched: Fetched) -> int:
    return fetched.records[0].offset if fetched.records else fetched.next_offset


def _set_options(
    headers: dict[str, str], ack_policy: str | None, msg_id: str | None, expected: int | None
) -> None:
    if ack_policy is not None:
        headers[HEADER_ACK] = ack_policy
    if msg_id is not None:
        headers[HEADER_MSG_ID] = msg_id
    if expected is not None:
        headers[HEADER_EXPECTED_OFFSET] = str(expected)


_BATCH_HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def encode_producer_batch(
    values: list[bytes],
    keys: list[bytes | None] | None = None,
    headers: Iterable[Mapping[str, str] | None] | None = None,
) -> bytes:
    """The Arrow IPC stream a producer batch carries: ``value`` and optional ``key``/``headers``."""
    columns: dict[str, pa.Array] = {"value": pa.array(values, pa.binary())}
    if keys is not None:
        if len(keys) != len(values):
            raise InvalidRequestError("keys and values differ in length")
        columns["key"] = pa.array(keys, pa.binary())
    if headers is not None:
        rows = [
            [{"key": k, "value": v.encode()} for k, v in h.items()] if h else None for h in headers
        ]
        if len(rows) != len(values):
            raise InvalidRequestError("headers and values differ in length")
        columns["headers"] = pa.array(rows, _BATCH_HEADERS_TYPE)
    return encode_arrow_table(pa.table(columns))


def encode_arrow_table(table: pa.Table) -> bytes:
    """``table`` as an Arrow IPC stream (what a producer batch message carries)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    payload: bytes = sink.getvalue().to_pybytes()
    return payload


def decode_fetch_arrow(body: bytes) -> list[Record]:
    """Records of an Arrow fetch response (columns of the REST fetch schema)."""
    return records_of_fetch_table(pa.ipc.open_stream(pa.py_buffer(body)).read_all())
