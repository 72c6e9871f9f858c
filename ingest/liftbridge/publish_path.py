"""Where a Liftbridge publish is written: this node's leader replica, or its leader elsewhere.

A Liftbridge client sends a publish to any node. The leader of the partition enters the
produce path a REST publish takes (``replica.produce``); any other node puts the publish on
the partition's subject as a Liftbridge envelope, as a Liftbridge publisher would, and the
leader's NATS intake stores it and acks on this node's inbox. With authentication on a node
may not publish on streams' subjects, so it calls the leader's own Liftbridge API instead, as
the caller (ingest/liftbridge/peer_publish.py, peer_streams.py). Without ``wait`` the publish
is fire-and-forget (Liftbridge's answer to a Publish without a deadline or with AckPolicy
NONE): the record is still stored, and an ack inbox the client named still gets its ack.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable

from nats.aio.client import Client as NatsClient

from coordinator.znodes import NO_LEADER
from ingest.admin.node_view import NodeView
from ingest.liftbridge.ack_inbox import AckInbox, ack_inbox
from ingest.liftbridge.acks import ack_refusal
from ingest.liftbridge.peer_publish import forward_publish
from ingest.liftbridge.peer_streams import ForwardedStreams
from ingest.liftbridge.publication import Publication
from ingest.liftbridge.publish_checks import PublishTarget
from ingest.produce.request import local_request
from ingest.replica.replica import PartitionReplica
from spark_log.errors import (
    LiftlogError,
    NatsConnectError,
    NotLeaderError,
    RequestTimeoutError,
    UnavailableError,
)
from spark_log.liftbridge import api_pb2 as pb
from spark_log.liftbridge.envelope import encode_ack, encode_publish

log = logging.getLogger("liftlog.liftbridge")

_background: set[asyncio.Task[None]] = set()
"""Fire-and-forget publishes still being stored (a task nobody holds may be collected)."""


FORWARD_ACK_TIMEOUT_S = 30.0
"""How long a publish forwarded over gRPC waits for its ack when its caller set no bound."""


async def deliver(node: NodeView, pub: Publication, timeout: float | None) -> pb.Ack | None:
    """Store ``pub``; with a ``timeout`` (seconds) wait that long for its ack (else
    RequestTimeoutError), without one return None at once. A refusal raises its typed error."""
    if timeout is None:
        in_background(await dispatch(node, pub, wait=False), pub)
        return None
    return await within(await dispatch(node, pub, wait=True, deadline_s=timeout), timeout, pub)


async def dispatch(
    node: NodeView,
    pub: Publication,
    *,
    wait: bool,
    deadline_s: float | None = None,
    streams: ForwardedStreams | None = None,
) -> Awaitable[pb.Ack | None]:
    """Put ``pub`` on its way and return what yields its ack. Publishes dispatched one after
    the other by one caller are stored in that order (PublishAsync keeps a stream's order by
    dispatching its requests in sequence, forwarding through its own ``streams``): a local
    publish is queued by a task started now (tasks start in the order they are made), a
    forwarded one is on the NATS connection or its gRPC call when this returns. Without
    ``wait`` a forwarded publish asks for no ack (its awaitable yields None); ``deadline_s``
    bounds a unary forward's wait for its ack (the leader waits as long)."""
    replica = _leader_replica(node, pub.target)
    if replica is not None:
        return asyncio.ensure_future(_store_here(node, replica, pub))
    target = pub.target
    if pub.forwarded:  # sent here as to the leader: the leader moved, the client must look
        raise NotLeaderError(
            f"broker {node.config.broker_id} does not lead {target.spec.name}/"
            f"{target.partition} (it moved): refresh the metadata and retry"
        )
    if target.leader == NO_LEADER:
        raise UnavailableError(
            f"{target.spec.name}/{target.partition} has no leader now (an election is under "
            "way): retry"
        )
    if not node.auth.enabled:
        return await _forward(node, pub, wait)
    if streams is not None:
        return await streams.send(pub, wait)
    bound = (deadline_s or FORWARD_ACK_TIMEOUT_S) if wait else None
    return await forward_publish(node, pub, bound)


def _leader_replica(node: NodeView, target: PublishTarget) -> PartitionReplica | None:
    replica = node.replicas.replicas.get((target.spec.name, target.partition))
    return replica if replica is not None and replica.state.is_leader else None


async def _store_here(node: NodeView, replica: PartitionReplica, pub: Publication) -> pb.Ack:
    target = pub.target
    request = local_request(
        target.subject,
        target.ack_policy,
        key=pub.key or None,
        value=pub.value,
        headers=target.headers,
        expected_offset=target.expected_offset,
    )
    acks = await replica.produce([request])
    ack = pub.fields.ack(acks[0].offset, time.time_ns())
    await tell_client(node, ack)
    return ack


async def _forward(node: NodeView, pub: Publication, wait: bool) -> Awaitable[pb.Ack | None]:
    target = pub.target
    nc = nats_connection(node)
    message = envelope_message(pub)
    if not wait:
        await nc.publish(target.subject, encode_publish(message))
        return _nothing()
    inbox = await ack_inbox(nc)
    subject, future = inbox.reserve()
    message.ackInbox = subject
    try:
        await nc.publish(target.subject, encode_publish(message))
    except BaseException:
        inbox.release(subject)
        raise
    # a task now, so the reservation is released even if nobody awaits the ack
    return asyncio.ensure_future(_forwarded_ack(node, pub, inbox, subject, future))


async def _nothing() -> None:
    return None


async def _forwarded_ack(
    node: NodeView, pub: Publication, inbox: AckInbox, subject: str, future: Awaitable[pb.Ack]
) -> pb.Ack:
    try:
        ack = await future
    finally:
        inbox.release(subject)
    refusal = ack_refusal(ack)
    if refusal is not None:
        raise refusal
    full = pub.fields.complete(ack, time.time_ns())
    await tell_client(node, full)
    return full


def envelope_message(pub: Publication) -> pb.Message:
    """The ``Message`` a Liftbridge publisher would put on the partition's subject (the
    expected offset -1 unless the stream checks it, so a leader never checks it wrongly)."""
    target, fields = pub.target, pub.fields
    return pb.Message(
        key=pub.key,
        value=pub.value,
        stream=target.spec.name,
        subject=target.subject,
        headers=pub.byte_headers,
        ackInbox=fields.ack_inbox,
        correlationId=fields.correlation_id,
        ackPolicy=fields.ack_policy,
        offset=pub.wire_expected_offset,
    )


def nats_connection(node: NodeView) -> NatsClient:
    """The node's NATS connection, or NatsConnectError (UNAVAILABLE) while it has none."""
    nc = node.nc
    if nc is None or not nc.is_connected:
        raise NatsConnectError(f"broker {node.config.broker_id} is not connected to NATS")
    return nc


async def tell_client(node: NodeView, ack: pb.Ack) -> None:
    """The ack also goes to the inbox the client named, as a Liftbridge leader sends it."""
    nc = node.nc
    if ack.ackInbox and nc is not None and nc.is_connected:
        await nc.publish(ack.ackInbox, encode_ack(ack))


async def within(
    waiting: Awaitable[pb.Ack | None], timeout: float, pub: Publication
) -> pb.Ack | None:
    try:
        return await asyncio.wait_for(waiting, timeout)
    except TimeoutError as exc:
        raise RequestTimeoutError(
            f"no ack for the publish to {pub.target.spec.name}/{pub.target.partition} "
            f"within {timeout:.3f}s (ack policy {pub.target.ack_policy})"
        ) from exc


def in_background(storing: Awaitable[pb.Ack | None], pub: Publication) -> None:
    """Let ``storing`` finish on its own; a refusal is only logged (nobody waits for it)."""

    async def run() -> None:
        try:
            await storing
        except LiftlogError as exc:
            log.debug(
                "fire-and-forget publish to %s/%s refused: %s",
                pub.target.spec.name,
                pub.target.partition,
                exc,
            )

    task = asyncio.ensure_future(run())
    _background.add(task)
    task.add_done_callback(_background.discard)
