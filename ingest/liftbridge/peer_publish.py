"""A unary publish forwarded to its partition's leader over the leader's Liftbridge API.

With authentication on, a node that does not lead the partition sends the publish to the
leader as the client sent it (the caller's token, ingest/liftbridge/peer_channels.py): the
leader judges the caller again, stores the record, sends the ack to the client's ack inbox
and answers with the whole ``Ack``, or with the status this node then answers with. A
publish that asks for no ack is sent without a deadline, so the leader answers at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

import grpc

from ingest.admin.node_view import NodeView
from ingest.liftbridge.peer_channels import forward_metadata, peer_channels
from ingest.liftbridge.peer_errors import error_from_status
from ingest.liftbridge.publication import Publication
from ingest.liftbridge.status import RelayedStatusError
from spark_log.errors import LiftlogError, RequestTimeoutError
from spark_log.liftbridge import api_pb2 as pb

NO_ACK_CALL_TIMEOUT_S = 30.0
"""How long a forwarded publish that asks for no ack may take to be taken by the leader."""


async def forward_publish(
    node: NodeView, pub: Publication, deadline_s: float | None
) -> Awaitable[pb.Ack | None]:
    """Send ``pub`` to its leader now; the awaitable yields the leader's ack, or None when
    ``deadline_s`` is None (no ack asked for). A refusal raises the leader's typed error."""
    broker = pub.target.leader
    stub = await peer_channels(node).stub(broker)
    call = stub.Publish(forwarded_request(pub), timeout=deadline_s, metadata=forward_metadata(node))
    return asyncio.ensure_future(_answer(node, broker, call, deadline_s))


async def _answer(
    node: NodeView,
    broker: int,
    call: Awaitable[pb.PublishResponse],
    deadline_s: float | None,
) -> pb.Ack | None:
    try:
        if deadline_s is None:
            await asyncio.wait_for(call, NO_ACK_CALL_TIMEOUT_S)
            return None
        response = await call
    except grpc.aio.AioRpcError as exc:
        raise peer_refusal(node, broker, exc) from exc
    except TimeoutError as exc:
        raise RequestTimeoutError(
            f"broker {broker} did not take a forwarded publish within {NO_ACK_CALL_TIMEOUT_S}s"
        ) from exc
    return response.ack if response.HasField("ack") else None


def peer_refusal(node: NodeView, broker: int, exc: grpc.aio.AioRpcError) -> LiftlogError:
    """The typed error a forwarded call ended with; a broker that could not be reached has
    its channel dropped, so the next forward looks its address up again."""
    error = error_from_status(exc.code(), exc.details() or "")
    if isinstance(error, RelayedStatusError) and exc.code() == grpc.StatusCode.UNAVAILABLE:
        peer_channels(node).forget(broker)
    return error


def forwarded_request(pub: Publication) -> pb.PublishRequest:
    """The ``PublishRequest`` the client would have sent the leader itself."""
    target, fields = pub.target, pub.fields
    return pb.PublishRequest(
        key=pub.key,
        value=pub.value,
        stream=target.spec.name,
        partition=target.partition,
        headers=pub.byte_headers,
        ackInbox=fields.ack_inbox,
        correlationId=fields.correlation_id,
        ackPolicy=fields.ack_policy,
        expectedOffset=pub.wire_expected_offset,
    )
