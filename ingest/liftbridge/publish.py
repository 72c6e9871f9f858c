"""Publish and PublishToSubject; PublishAsync lives in ingest/liftbridge/publish_async.py.

A Publish is checked as Liftbridge checks it (ingest/liftbridge/publish_checks.py), resumes a
paused stream (ingest/liftbridge/publish_resume.py) and is stored by the partition's leader
(ingest/liftbridge/publish_path.py). As on Liftbridge, only a call with a deadline and an ack
policy other than NONE waits for its ack; any other returns an empty response at once.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from ingest.liftbridge import publish_async as session
from ingest.liftbridge.acks import ack_policy_name
from ingest.liftbridge.calls import RpcCall
from ingest.liftbridge.peer_channels import is_forwarded
from ingest.liftbridge.publication import Publication
from ingest.liftbridge.publish_checks import (
    check_ack_inbox,
    check_publish_subject,
    publish_target,
)
from ingest.liftbridge.publish_path import deliver
from ingest.liftbridge.publish_resume import resume_if_paused
from ingest.liftbridge.subject_publish import publish_on_subject
from ingest.produce.envelope_acks import EnvelopeAck
from ingest.produce.envelope_intake import text_headers
from spark_log.liftbridge import api_pb2 as pb


async def publish(call: RpcCall, request: pb.PublishRequest) -> pb.PublishResponse:
    received_ns = time.time_ns()
    target = publish_target(call.node, request)
    check_ack_inbox(request.ackInbox)
    await resume_if_paused(call, target)
    fields = EnvelopeAck(
        stream=target.spec.name,
        partition_subject=target.subject,
        msg_subject=target.subject,
        ack_inbox=request.ackInbox,
        correlation_id=request.correlationId,
        ack_policy=request.ackPolicy,
        reception_ns=received_ns,
    )
    pub = Publication(target, request.key, request.value, fields, is_forwarded(call.context))
    ack = await deliver(call.node, pub, ack_wait(call, target.ack_policy))
    if ack is None:
        return pb.PublishResponse()
    return pb.PublishResponse(ack=ack, correlationId=request.correlationId)


async def publish_to_subject(
    call: RpcCall, request: pb.PublishToSubjectRequest
) -> pb.PublishToSubjectResponse:
    check_publish_subject(request.subject)
    check_ack_inbox(request.ackInbox)
    policy = ack_policy_name(request.ackPolicy)
    text_headers(request.headers)  # refused here, before any stream could store half of it
    ack = await publish_on_subject(call, request, ack_wait(call, policy))
    return pb.PublishToSubjectResponse() if ack is None else pb.PublishToSubjectResponse(ack=ack)


def ack_wait(call: RpcCall, ack_policy: str) -> float | None:
    """How long a unary publish waits for its ack: the call's deadline, or None (no wait)
    without a deadline or with ack policy none."""
    if ack_policy == "none":
        return None
    return call.context.time_remaining()


async def publish_async(
    call: RpcCall, requests: AsyncIterator[pb.PublishRequest]
) -> AsyncIterator[pb.PublishResponse]:
    async for response in session.PublishAsyncSession(call).run(requests):
        yield response
