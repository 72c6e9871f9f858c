"""The FastAPI app every node serves: admin, records, cluster, health and metrics."""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Depends, FastAPI, Query, Request, Response
from fastapi.responses import JSONResponse
from fastapi_offline import FastAPIOffline
from pydantic import ValidationError

from ingest.admin import decommission, preferred_election, reassign
from ingest.admin import streams as admin
from ingest.api.activity_routes import install_activity_routes
from ingest.api.auth import auth_dependency, principal_of
from ingest.api.auth_first import authenticating_route_class
from ingest.api.auth_routes import install_auth_routes
from ingest.api.body_limit import BodyLimitMiddleware
from ingest.api.cursor_routes import install_cursor_routes
from ingest.api.encryption_routes import install_encryption_routes
from ingest.api.errors import ERROR_RESPONSES, install_error_handlers
from ingest.api.group_routes import install_group_routes
from ingest.api.models import (
    ControlledShutdown,
    Decommission,
    PublishBody,
    ReassignPlan,
    StreamAlter,
    StreamCreate,
)
from ingest.api.strict_params import refuse_unknown_params
from ingest.groups.cursors import CursorService
from ingest.groups.service import GroupService
from ingest.lake.tier import LakeTier
from ingest.produce.request import (
    ProduceAck,
    ProduceRequest,
    ack_policy_or_default,
    check_record_size,
    create_timestamp,
    decode_arrow_stream,
    local_request,
    normalize_batch_table,
)
from ingest.replica.positions import (
    START_PATTERN,
    FetchLimits,
    Stop,
    check_start_choice,
    fetch_until_stop,
    named_start_offset,
)
from ingest.replica.tiered_fetch import TieredReads
from spark_log.api_models import (
    BrokerInfo,
    ClusterInfo,
    ControlledShutdownResult,
    DecommissionPlan,
    FetchResponse,
    FlushResult,
    HealthStatus,
    PartitionFlush,
    PreferredElection,
    PublishResult,
    ReassignmentStatus,
    ReplicaView,
    StreamDeleted,
    StreamDescription,
    StreamList,
    UncleanElection,
)
from spark_log.auth import Action, stream_resource
from spark_log.errors import (
    CursorNotFoundError,
    InvalidRequestError,
    NotLeaderError,
    RequestTooLargeError,
    UnavailableError,
)
from spark_log.log import Record
from spark_log.log.fetch_table import encode_fetch_table
from spark_log.stream_spec import StreamSpec
from spark_log.wire import ARROW_STREAM_MEDIA_TYPE, HEADER_KEY

if TYPE_CHECKING:
    from ingest.admin.node_view import NodeView as IngestNode

Encoding = Annotated[str, Query(pattern="^(base64|utf-8)$", description="key/value encoding")]


def create_app(node: IngestNode) -> FastAPI:
    app = FastAPIOffline(  # /docs and /redoc from the package's own Swagger UI files, no CDN
        title="Liftlog",
        version="0.1.0",
        description="Durable, partitioned, offset-addressed streams recorded from NATS subjects.",
        responses=ERROR_RESPONSES,
        # who the caller is and whether it may, before anything else about the request
        dependencies=[Depends(auth_dependency(node.auth)), Depends(refuse_unknown_params)],
    )
    # before any route is added: routes that declare a body authenticate before parsing it
    app.router.route_class = authenticating_route_class(node.auth)
    install_error_handlers(app)
    app.add_middleware(BodyLimitMiddleware, max_bytes=node.config.limits.max_request_bytes)
    cursors = CursorService(node)
    _stream_routes(app, node)
    _record_routes(app, node, cursors)
    _cluster_routes(app, node)
    install_auth_routes(app, node, node.auth)
    install_encryption_routes(app, node)
    install_activity_routes(app, node)
    groups = GroupService(node, cursors)
    install_cursor_routes(app, cursors, groups.refuse_if_managed)
    install_group_routes(app, node, groups)
    app.state.closers = [groups.close]
    return app


async def close_app(app: FastAPI) -> None:
    """Stop what the routes started in the background (the group session expiry task)."""
    for close in app.state.closers:
        await close()


def _stream_routes(app: FastAPI, node: IngestNode) -> None:
    @app.post(
        "/v1/streams",
        status_code=201,
        tags=["streams"],
        response_model=StreamDescription,
        responses={200: {"model": StreamDescription, "description": "identical stream exists"}},
    )
    async def create_stream(body: StreamCreate, response: Response) -> StreamDescription:
        """Create a stream; an identical spec answers 200, a conflicting one 409."""
        spec = StreamSpec(**body.model_dump())
        created, described = await admin.create_stream(node, spec)
        response.status_code = 201 if created else 200
        return described

    @app.get("/v1/streams", tags=["streams"], response_model=StreamList)
    async def list_streams(request: Request, internal: bool = False) -> StreamList:
        """The streams the caller may describe (all of them for a super user); the nodes'
        own streams (``__cursors``) only with ``?internal=true``."""
        principal = principal_of(request)
        return StreamList(
            tuple(
                s
                for s in await admin.list_streams(node)
                if (internal or not s.internal)
                and node.auth.allows(principal, Action.DESCRIBE, stream_resource(s.name))
            )
        )

    @app.get("/v1/streams/{stream}", tags=["streams"], response_model=StreamDescription)
    async def describe_stream(stream: str) -> StreamDescription:
        return await admin.describe_stream(node, stream)

    @app.post(
        "/v1/streams/{stream}/partitions/{partition}/unclean-election",
        tags=["streams"],
        response_model=UncleanElection,
    )
    async def unclean_election(
        stream: str,
        partition: int,
        broker_id: Annotated[int | None, Query(description="the replica to elect")] = None,
        confirm: Annotated[bool, Query(description="really elect; otherwise a dry run")] = False,
    ) -> UncleanElection:
        """Elect a replica outside the ISR. Shows the offsets that may be lost; acts only with
        confirm=true. Committed records above the new leader's LEO are lost."""
        return await admin.unclean_election(node, stream, partition, broker_id, confirm)

    @app.post(
        "/v1/streams/{stream}/elect-preferred",
        tags=["streams"],
        response_model=PreferredElection,
    )
    async def elect_preferred(
        stream: str,
        partition: Annotated[int | None, Query(description="one partition (default: all)")] = None,
    ) -> PreferredElection:
        """Move leadership back to the preferred replica (the first of ``replicas``) where it
        is live and in the ISR; answered by the controller (other nodes forward)."""
        return await preferred_election.elect_preferred(node, stream, partition)

    @app.post("/v1/streams/{stream}/reassign", tags=["streams"], response_model=ReassignmentStatus)
    async def reassign_partitions(stream: str, body: ReassignPlan) -> ReassignmentStatus:
        """Move partitions' replicas to the target brokers: new replicas catch up and join the
        ISR before the old ones are dropped (carried out by the controller)."""
        targets = reassign.plan_targets([(t.partition, t.replicas) for t in body.partitions])
        return await reassign.submit(node, stream, targets)

    @app.get("/v1/streams/{stream}/reassign", tags=["streams"], response_model=ReassignmentStatus)
    async def reassignment_progress(stream: str) -> ReassignmentStatus:
        """The stream's pending reassignments and the phase each is in."""
        return await reassign.progress(node, stream)

    @app.delete(
        "/v1/streams/{stream}/reassign", tags=["streams"], response_model=ReassignmentStatus
    )
    async def cancel_reassignment(
        stream: str,
        partition: Annotated[
            int | None, Query(ge=0, description="one partition (default: every pending one)")
        ] = None,
    ) -> ReassignmentStatus:
        """Cancel pending reassignments (Kafka's ``--cancel``): each partition goes back to its
        original replicas, leadership to an original replica in the ISR; the replicas being
        added delete their data. 404 ``no_reassignment`` when nothing is pending."""
        return await reassign.cancel(node, stream, partition)

    @app.get(
        "/v1/streams/{stream}/partitions/{partition}", tags=["streams"], response_model=ReplicaView
    )
    async def partition_view(stream: str, partition: int) -> ReplicaView:
        """This broker's own view of its replica (role, epoch, HW, LEO; followers' LEOs on
        the leader)."""
        return admin.local_partition_view(node, stream, partition)

    @app.delete("/v1/streams/{stream}", tags=["streams"], response_model=StreamDeleted)
    async def delete_stream(stream: str) -> StreamDeleted:
        await admin.delete_stream(node, stream)
        return StreamDeleted(stream)

    @app.post("/v1/streams/{stream}/pause", tags=["streams"], response_model=StreamDescription)
    async def pause_stream(stream: str) -> StreamDescription:
        """Stop recording the stream's subject; records stay readable."""
        return await admin.set_paused(node, stream, True)

    @app.post("/v1/streams/{stream}/resume", tags=["streams"], response_model=StreamDescription)
    async def resume_stream(stream: str) -> StreamDescription:
        return await admin.set_paused(node, stream, False)

    @app.patch("/v1/streams/{stream}", tags=["streams"], response_model=StreamDescription)
    async def alter_stream(stream: str, body: StreamAlter) -> StreamDescription:
        """Change retention, default ack policy, min ISR, max record size or compaction
        settings; only the fields sent change. Every node applies them without a restart.
        Immutable fields with another value: 409 ``immutable_field``."""
        return await admin.alter_stream(node, stream, body.model_dump(exclude_unset=True))

    @app.post("/v1/streams/{stream}/readonly", tags=["streams"], response_model=StreamDescription)
    async def set_stream_read_only(stream: str) -> StreamDescription:
        """Refuse every publish with ``stream_readonly`` (nothing is stored); fetches and
        subscriptions go on."""
        return await admin.set_read_only(node, stream, True)

    @app.post("/v1/streams/{stream}/readwrite", tags=["streams"], response_model=StreamDescription)
    async def set_stream_read_write(stream: str) -> StreamDescription:
        """Accept publishes again after ``readonly``."""
        return await admin.set_read_only(node, stream, False)

    @app.post("/v1/streams/{stream}/flush", tags=["streams"], response_model=FlushResult)
    async def flush_stream(stream: str) -> FlushResult:
        """Seal (roll the active segment), fsync and export to the lake every partition of
        the stream, each on its leader; answers once the lake holds everything committed now,
        with each partition's `lake_offset` (null when the lake is disabled)."""
        return await admin.flush_stream(node, stream)

    @app.post(
        "/v1/streams/{stream}/partitions/{partition}/flush",
        tags=["streams"],
        response_model=PartitionFlush,
    )
    async def flush_partition(stream: str, partition: int) -> PartitionFlush:
        """Seal, fsync and export one partition; only its leader answers (421 elsewhere)."""
        return await admin.flush_partition(node, stream, partition)


async def _fetch_start(
    reads: TieredReads, offset: int | None, timestamp: int | None, start: str | None
) -> int:
    """The offset a fetch starts at; with none given, ``earliest`` (the lake's first offset
    when the lake holds records below the log start)."""
    if timestamp is not None:
        return await reads.offset_for_timestamp(timestamp)
    if start is not None and start != "earliest":
        return named_start_offset(reads.log, start)
    if offset is not None:
        return offset
    return await reads.earliest_offset()


async def _cursor_start(
    cursors: CursorService, stream: str, partition: int, cursor_id: str, fallback: str | None
) -> tuple[int | None, str | None]:
    """(offset, None) after the cursor's offset, or (None, ``fallback``) when it was never
    set and a fallback start was given."""
    try:
        view = await cursors.fetch(stream, partition, cursor_id, forwarded=False)
    except CursorNotFoundError:
        if fallback is None:
            raise
        return None, fallback
    return view.offset + 1, None


def _record_routes(app: FastAPI, node: IngestNode, cursors: CursorService) -> None:
    lake = LakeTier()

    @app.get(
        "/v1/streams/{stream}/partitions/{partition}/records",
        tags=["records"],
        response_model=FetchResponse,
        responses={
            200: {
                "content": {ARROW_STREAM_MEDIA_TYPE: {"schema": {"type": "string"}}},
                "description": "JSON, or an Arrow IPC stream when the client accepts it",
            }
        },
    )
    async def fetch_records(
        request: Request,
        stream: str,
        partition: int,
        offset: Annotated[int | None, Query(ge=0)] = None,
        timestamp: Annotated[
            int | None, Query(ge=-(2**63), le=2**63 - 1, description="ms since epoch")
        ] = None,
        start: Annotated[
            str | None,
            Query(
                pattern=START_PATTERN,
                description="earliest | latest (the last committed record) | new-only (the HW)",
            ),
        ] = None,
        cursor: Annotated[
            str | None,
            Query(
                description="a cursor id: start after its offset; with start, that start "
                "when the cursor was never set (else 404 cursor_not_found)"
            ),
        ] = None,
        stop_offset: Annotated[
            int | None, Query(ge=0, description="the last offset to return (inclusive)")
        ] = None,
        stop_timestamp: Annotated[
            int | None,
            Query(
                ge=-(2**63),
                le=2**63 - 1,
                description="ms since epoch: end before the first record stamped after it",
            ),
        ] = None,
        max_records: Annotated[int, Query(ge=1)] = 1000,
        max_bytes: Annotated[int, Query(ge=1)] = 1024 * 1024,
        wait_ms: Annotated[int, Query(ge=0)] = 0,
        encoding: Encoding = "base64",
        from_follower: Annotated[
            bool, Query(description="serve from this broker's replica even if it is a follower")
        ] = False,
    ) -> Response:
        """Committed records (below the high watermark) from an offset, a timestamp or a named
        start, up to an optional stop; ``end_reached`` (JSON) or the ``Liftlog-End-Reached``
        header (Arrow) says the stop was reached."""
        check_start_choice(offset, timestamp, None if cursor is not None else start, cursor)
        replica = node.replicas.replica(stream, partition)
        if not from_follower and not replica.state.is_leader:
            raise NotLeaderError(
                f"broker {node.config.broker_id} does not lead {stream}/{partition} "
                f"(leader: {replica.state.leader_id}); ask the leader or pass from_follower=true"
            )
        limits = node.config.ingest
        reads = TieredReads(replica, lake)
        if cursor is not None:
            offset, start = await _cursor_start(cursors, stream, partition, cursor, start)
        offset = await _fetch_start(reads, offset, timestamp, start)
        arrow = ARROW_STREAM_MEDIA_TYPE in request.headers.get("accept", "")
        bounds = FetchLimits(
            min(max_records, limits.max_fetch_records),
            min(max_bytes, limits.max_fetch_bytes),
            min(wait_ms, limits.max_wait_ms),
        )
        result = await fetch_until_stop(
            reads, offset, Stop(stop_offset, stop_timestamp), bounds, arrow=arrow
        )
        headers = result.headers()
        if arrow:
            return Response(
                encode_fetch_table(result.table),
                media_type=ARROW_STREAM_MEDIA_TYPE,
                headers=headers,
            )
        body = fetch_response_json(
            [record_json(r, encoding) for r in result.records],
            high_watermark=result.high_watermark,
            log_start_offset=result.log_start_offset,
            next_offset=result.next_offset,
            end_reached=result.end_reached,
        )
        # dicts straight to JSON: no model per record on this hot path (FetchResponse stays
        # the documented response model; a contract test keeps the two shapes equal)
        return JSONResponse(body, headers=headers)

    @app.post(
        "/v1/streams/{stream}/partitions/{partition}/records",
        tags=["records"],
        response_model=PublishResult,
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {"schema": PublishBody.model_json_schema()},
                    ARROW_STREAM_MEDIA_TYPE: {"schema": {"type": "string", "format": "binary"}},
                },
            }
        },
    )
    async def publish_records(
        request: Request,
        stream: str,
        partition: int,
        ack_policy: Annotated[str | None, Query(pattern="^(none|leader|all)$")] = None,
        encoding: Encoding = "base64",
    ) -> PublishResult:
        """Append records (JSON, or an Arrow IPC stream with value/key/headers columns);
        refusals carry their code (409 stream_paused, 503 not_enough_replicas, ...)."""
        admin.refuse_internal(stream, "published to (only the nodes write it)")
        replica = node.replicas.replica(stream, partition)
        policy = ack_policy_or_default(ack_policy, replica.spec)
        subject = replica.spec.partition_subject(partition)
        data = await _read_body(request, node.config.limits.max_request_bytes)
        if request.headers.get("content-type", "").startswith(ARROW_STREAM_MEDIA_TYPE):
            requests = [_arrow_request(data, replica.spec, subject, policy)]
        else:
            body = _parse_json_body(data)
            requests = [
                _json_request(r, encoding, replica.spec, subject, policy) for r in body.records
            ]
        return publish_result(stream, partition, await replica.produce(requests))


def _cluster_routes(app: FastAPI, node: IngestNode) -> None:
    @app.get("/v1/cluster", tags=["cluster"], response_model=ClusterInfo)
    async def cluster() -> ClusterInfo:
        """The live brokers (with their REST and NATS URLs) and the controller's id."""
        brokers = await node.live_brokers()
        return ClusterInfo(
            brokers=tuple(BrokerInfo(b.broker_id, b.host, b.api_url, b.nats_url) for b in brokers),
            controller=await node.controller_id(),
            this_broker=node.config.broker_id,
            auth="enabled" if node.auth.enabled else "disabled",
        )

    @app.post(
        "/v1/cluster/controlled-shutdown",
        tags=["cluster"],
        response_model=ControlledShutdownResult,
    )
    async def controlled_shutdown(body: ControlledShutdown) -> ControlledShutdownResult:
        """Move leadership off a broker (answered by the controller; others forward)."""
        remaining = await node.request_controlled_shutdown(body.broker_id)
        return ControlledShutdownResult(body.broker_id, remaining)

    @app.post("/v1/cluster/decommission", tags=["cluster"], response_model=DecommissionPlan)
    async def decommission_broker(body: Decommission) -> DecommissionPlan:
        """Move every replica off a broker (reassignments onto the other live brokers,
        spread evenly); with dry_run, only the plan."""
        return await decommission.decommission(node, body.broker_id, body.dry_run)

    @app.get("/healthz", tags=["health"], response_model=HealthStatus)
    async def healthz() -> HealthStatus:
        """The process is up and serving."""
        return HealthStatus("ok")

    @app.get("/readyz", tags=["health"], response_model=HealthStatus)
    async def readyz() -> HealthStatus:
        """Registered in ZooKeeper, connected to NATS and hosting its replicas."""
        if not node.ready:
            raise UnavailableError("node is starting or stopping")
        if node.nc is None or not node.nc.is_connected:
            raise UnavailableError("not connected to NATS")
        return HealthStatus("ready")

    @app.get("/metrics", tags=["health"])
    async def metrics() -> Response:
        return Response(node.metrics.render(), media_type="text/plain; version=0.0.4")


def record_json(record: Record, encoding: str) -> dict[str, Any]:
    """One fetched record as the JSON object ``RecordJson`` documents, built directly."""
    return {
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key": _encode(record.key, encoding),
        "value": _encode(record.value, encoding),
        "headers": {k: v.decode("utf-8", "replace") for k, v in record.headers},
        "subject": record.subject,
    }


def fetch_response_json(
    records: list[dict[str, Any]],
    *,
    high_watermark: int,
    log_start_offset: int,
    next_offset: int,
    end_reached: bool = False,
) -> dict[str, Any]:
    """A JSON fetch answer with ``FetchResponse``'s fields, built directly."""
    return {
        "records": records,
        "high_watermark": high_watermark,
        "log_start_offset": log_start_offset,
        "next_offset": next_offset,
        "end_reached": end_reached,
    }


def publish_result(stream: str, partition: int, acks: list[ProduceAck]) -> PublishResult:
    """The REST publish answer: every record's offset, and ``duplicate`` when the produce
    path found every request already written (nothing new was stored)."""
    offsets = tuple(ack.offset + i for ack in acks for i in range(ack.count))
    duplicate = bool(acks) and all(ack.duplicate for ack in acks)
    return PublishResult(stream, partition, offsets, duplicate)


def _encode(data: bytes | None, encoding: str) -> str | None:
    if data is None:
        return None
    if encoding == "utf-8":
        return data.decode("utf-8", "replace")
    return base64.b64encode(data).decode("ascii")


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


def _json_request(
    record: Any, encoding: str, spec: StreamSpec, subject: str, policy: str
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


async def _read_body(request: Request, max_bytes: int) -> bytes:
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


def _arrow_request(data: bytes, spec: StreamSpec, subject: str, policy: str) -> ProduceRequest:
    table = normalize_batch_table(decode_arrow_stream(data, "body"), spec)
    return local_request(subject, policy, records=table)
