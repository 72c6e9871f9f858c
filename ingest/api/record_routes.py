"""``/v1/streams/{stream}/partitions/{partition}/records``: fetch committed records, and
publish.

A fetch answers JSON, or an Arrow IPC stream when the client accepts one; offsets below the
local log start are read from the lake. A publish takes JSON records or an Arrow IPC stream
and enters the produce path a NATS publish takes.
"""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import FastAPI, Query, Request, Response
from fastapi.responses import JSONResponse

from ingest.admin import streams as admin
from ingest.admin.node_view import NodeView
from ingest.api.fetch_json import fetch_response_json, record_json
from ingest.api.fetch_start import cursor_start, fetch_start
from ingest.api.models import PublishBody
from ingest.api.publish_codec import produce_requests, publish_result, read_body
from ingest.groups.cursors import CursorService
from ingest.lake.tier import LakeTier
from ingest.produce.request import ack_policy_or_default
from ingest.replica.positions import (
    START_PATTERN,
    FetchLimits,
    Stop,
    check_start_choice,
    fetch_until_stop,
)
from ingest.replica.tiered_fetch import TieredReads
from spark_log.api_models import FetchResponse, PublishResult
from spark_log.errors import NotLeaderError
from spark_log.log.fetch_table import encode_fetch_table
from spark_log.wire import ARROW_STREAM_MEDIA_TYPE

Encoding = Annotated[str, Query(pattern="^(base64|utf-8)$", description="key/value encoding")]


def install_record_routes(
    app: FastAPI, node: NodeView, cursors: CursorService, lake: LakeTier
) -> None:

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
        started = time.perf_counter()
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
            offset, start = await cursor_start(cursors, stream, partition, cursor, start)
        offset = await fetch_start(reads, offset, timestamp, start)
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
        node.metrics.consumer_fetch.labels(stream).observe(time.perf_counter() - started)
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
        data = await read_body(request, node.config.limits.max_request_bytes)
        content_type = request.headers.get("content-type", "")
        requests = produce_requests(data, content_type, encoding, replica.spec, subject, policy)
        return publish_result(stream, partition, await replica.produce(requests))
