"""``proto.API``'s methods, each handed to the module that translates it.

Every RPC goes through the same door: the caller is authenticated and judged by the RPC table
(ingest/liftbridge/rpc_acl.py), then a typed Liftlog error becomes the gRPC status Liftbridge's
clients expect (ingest/liftbridge/status.py). The translations live in one module per group
of RPCs: streams, metadata, publish, subscribe, cursors, groups.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import grpc

from ingest.admin.node_view import NodeView
from ingest.groups.node_services import ConsumerServices
from ingest.liftbridge import cursors, groups, metadata, publish, streams, subscribe
from ingest.liftbridge.calls import RpcCall, open_call
from ingest.liftbridge.status import grpc_code, status_details
from spark_log.errors import LiftlogError
from spark_log.liftbridge import api_pb2 as pb
from spark_log.liftbridge import api_pb2_grpc

log = logging.getLogger("liftlog.liftbridge")

Req = TypeVar("Req")
Resp = TypeVar("Resp")
Context = grpc.aio.ServicerContext[object, object]
Handler = Callable[[RpcCall, Req], Awaitable[Resp]]


class LiftbridgeApi(api_pb2_grpc.APIServicer):
    """The node's servicer of ``proto.API`` (one per node, on the node's event loop)."""

    def __init__(self, node: NodeView, services: ConsumerServices) -> None:
        self._node = node
        self._services = services
        self.running = 0
        """RPCs being served now: a stop waits for them (grpc's grace costs time even with
        none running, so a stop without any does not wait)."""

    async def _unary(
        self, method: str, request: Req, context: Context, handler: Handler[Req, Resp]
    ) -> Resp:
        self.running += 1
        try:
            call = open_call(self._node, self._services, method, request, context)
            return await handler(call, request)
        except LiftlogError as exc:
            await context.abort(grpc_code(exc), status_details(exc))
        finally:
            self.running -= 1

    async def CreateStream(
        self, request: pb.CreateStreamRequest, context: Context
    ) -> pb.CreateStreamResponse:
        return await self._unary("CreateStream", request, context, streams.create_stream)

    async def DeleteStream(
        self, request: pb.DeleteStreamRequest, context: Context
    ) -> pb.DeleteStreamResponse:
        return await self._unary("DeleteStream", request, context, streams.delete_stream)

    async def PauseStream(
        self, request: pb.PauseStreamRequest, context: Context
    ) -> pb.PauseStreamResponse:
        return await self._unary("PauseStream", request, context, streams.pause_stream)

    async def SetStreamReadonly(
        self, request: pb.SetStreamReadonlyRequest, context: Context
    ) -> pb.SetStreamReadonlyResponse:
        return await self._unary("SetStreamReadonly", request, context, streams.set_stream_readonly)

    async def FetchMetadata(
        self, request: pb.FetchMetadataRequest, context: Context
    ) -> pb.FetchMetadataResponse:
        return await self._unary("FetchMetadata", request, context, metadata.fetch_metadata)

    async def FetchPartitionMetadata(
        self, request: pb.FetchPartitionMetadataRequest, context: Context
    ) -> pb.FetchPartitionMetadataResponse:
        return await self._unary(
            "FetchPartitionMetadata", request, context, metadata.fetch_partition_metadata
        )

    async def Publish(self, request: pb.PublishRequest, context: Context) -> pb.PublishResponse:
        return await self._unary("Publish", request, context, publish.publish)

    async def PublishToSubject(
        self, request: pb.PublishToSubjectRequest, context: Context
    ) -> pb.PublishToSubjectResponse:
        return await self._unary("PublishToSubject", request, context, publish.publish_to_subject)

    async def SetCursor(
        self, request: pb.SetCursorRequest, context: Context
    ) -> pb.SetCursorResponse:
        return await self._unary("SetCursor", request, context, cursors.set_cursor)

    async def FetchCursor(
        self, request: pb.FetchCursorRequest, context: Context
    ) -> pb.FetchCursorResponse:
        return await self._unary("FetchCursor", request, context, cursors.fetch_cursor)

    async def JoinConsumerGroup(
        self, request: pb.JoinConsumerGroupRequest, context: Context
    ) -> pb.JoinConsumerGroupResponse:
        return await self._unary("JoinConsumerGroup", request, context, groups.join_group)

    async def LeaveConsumerGroup(
        self, request: pb.LeaveConsumerGroupRequest, context: Context
    ) -> pb.LeaveConsumerGroupResponse:
        return await self._unary("LeaveConsumerGroup", request, context, groups.leave_group)

    async def FetchConsumerGroupAssignments(
        self, request: pb.FetchConsumerGroupAssignmentsRequest, context: Context
    ) -> pb.FetchConsumerGroupAssignmentsResponse:
        return await self._unary(
            "FetchConsumerGroupAssignments", request, context, groups.fetch_assignments
        )

    async def ReportConsumerGroupCoordinator(
        self, request: pb.ReportConsumerGroupCoordinatorRequest, context: Context
    ) -> pb.ReportConsumerGroupCoordinatorResponse:
        return await self._unary(
            "ReportConsumerGroupCoordinator", request, context, groups.report_coordinator
        )

    async def Subscribe(
        self, request: pb.SubscribeRequest, context: Context
    ) -> AsyncIterator[pb.Message]:
        """Server streaming: the empty handshake ``Message`` first, then the records; an
        error before or after the handshake ends the stream with its status."""
        self.running += 1
        try:
            call = open_call(self._node, self._services, "Subscribe", request, context)
            async for message in subscribe.subscribe(call, request):
                yield message
        except LiftlogError as exc:
            await context.abort(grpc_code(exc), status_details(exc))
        finally:
            self.running -= 1

    async def PublishAsync(
        self, request_iterator: AsyncIterator[pb.PublishRequest], context: Context
    ) -> AsyncIterator[pb.PublishResponse]:
        """Bidirectional: each request judged on its own, failures answered as
        ``asyncError`` responses on the stream (only the caller's authentication ends it)."""
        self.running += 1
        try:
            try:
                call = open_call(self._node, self._services, "PublishAsync", None, context)
            except LiftlogError as exc:
                await context.abort(grpc_code(exc), status_details(exc))
            async for response in publish.publish_async(call, request_iterator):
                yield response
        finally:
            self.running -= 1
