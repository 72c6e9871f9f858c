"""PublishToSubject: a Liftbridge envelope on any NATS subject, for the streams recording it.

The caller must be allowed to publish on every stream whose partition listens on the subject
(as this node last saw the streams); a subject no stream records is still published, as
Liftbridge does, unless authentication is on (PERMISSION_DENIED: the node would lend its
NATS login). With authentication on the node may not publish on streams' subjects at all:
the record goes to those partitions as a Publish would (ingest/liftbridge/subject_dispatch.py).
With a deadline and an ack policy other than NONE, the first ack any of those streams'
leaders sends is the answer (or DEADLINE_EXCEEDED), returned as it came,
``ackError`` included, as Liftbridge returns it.
"""

from __future__ import annotations

import asyncio
import time

from ingest.admin.node_view import NodeView
from ingest.liftbridge.ack_inbox import ack_inbox
from ingest.liftbridge.calls import RpcCall
from ingest.liftbridge.publish_checks import NO_EXPECTED_OFFSET
from ingest.liftbridge.publish_path import nats_connection, tell_client
from ingest.liftbridge.subject_dispatch import publish_to_partitions
from ingest.produce.envelope_acks import EnvelopeAck
from spark_log.auth import Action, stream_resource
from spark_log.errors import ForbiddenError, RequestTimeoutError
from spark_log.liftbridge import api_pb2 as pb
from spark_log.liftbridge.envelope import encode_publish
from spark_log.subjects import subject_matches


def recording_streams(node: NodeView, subject: str) -> list[str]:
    """The streams with a partition listening on ``subject``, by name."""
    return sorted(
        name
        for name, view in node.replicas.streams.items()
        if any(
            subject_matches(view.record.spec.partition_subject(p), subject)
            for p in range(view.record.spec.partitions)
        )
    )


async def publish_on_subject(
    call: RpcCall, request: pb.PublishToSubjectRequest, timeout: float | None
) -> pb.Ack | None:
    """Publish the envelope; with ``timeout`` wait for the first ack."""
    received_ns = time.time_ns()
    streams = recording_streams(call.node, request.subject)
    if call.node.auth.enabled and not streams:
        # the node's NATS login is no caller's to borrow for subjects outside every stream
        raise ForbiddenError(
            f"principal {call.principal!r} may not publish on {request.subject!r}: "
            "with authentication on, only subjects a stream records are published"
        )
    for name in streams:
        call.require(Action.PUBLISH, stream_resource(name))
    if call.node.auth.enabled:
        return await publish_to_partitions(call, request, streams, timeout)
    nc = nats_connection(call.node)
    message = pb.Message(
        key=request.key,
        value=request.value,
        subject=request.subject,
        headers=dict(request.headers),
        ackInbox=request.ackInbox,
        correlationId=request.correlationId,
        ackPolicy=request.ackPolicy,
        offset=NO_EXPECTED_OFFSET,
    )
    if timeout is None:
        await nc.publish(request.subject, encode_publish(message))
        return None
    inbox = await ack_inbox(nc)
    reply, future = inbox.reserve()
    message.ackInbox = reply
    try:
        await nc.publish(request.subject, encode_publish(message))
        ack = await asyncio.wait_for(future, timeout)
    except TimeoutError as exc:
        raise RequestTimeoutError(
            f"no ack for the publish on {request.subject} within {timeout:.3f}s"
        ) from exc
    finally:
        inbox.release(reply)
    fields = EnvelopeAck(
        stream="",
        partition_subject="",
        msg_subject=request.subject,
        ack_inbox=request.ackInbox,
        correlation_id=request.correlationId,
        ack_policy=request.ackPolicy,
        reception_ns=received_ns,
    )
    full = fields.complete(ack, time.time_ns())
    await tell_client(call.node, full)
    return full
