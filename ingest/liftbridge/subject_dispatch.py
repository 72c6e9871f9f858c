"""PublishToSubject with authentication on: the record goes to each partition on the subject.

A node may not publish on the streams' subjects over NATS then (its login cannot inject
records), so it does what NATS would have done: every partition listening on the subject gets
the record, one partition of a load-balanced stream (its partitions share one queue group),
each through the same path as a Publish (stored here, or by its leader over gRPC). Every
target is checked before any is dispatched, so a refused request stores nothing; a read-only
stream records nothing, as it would from NATS. Records carry their partition's subject.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Sequence

from ingest.liftbridge.calls import RpcCall
from ingest.liftbridge.publication import Publication
from ingest.liftbridge.publish_checks import NO_EXPECTED_OFFSET, publish_target
from ingest.liftbridge.publish_path import dispatch, in_background
from ingest.liftbridge.publish_resume import resume_if_paused
from ingest.produce.envelope_acks import EnvelopeAck
from spark_log.errors import LiftlogError, RequestTimeoutError, StreamReadOnlyError
from spark_log.liftbridge import api_pb2 as pb
from spark_log.stream_spec import StreamSpec
from spark_log.subjects import subject_matches


async def publish_to_partitions(
    call: RpcCall, request: pb.PublishToSubjectRequest, streams: list[str], timeout: float | None
) -> pb.Ack | None:
    """Store the record in every partition of ``streams`` on the subject; with ``timeout``
    the first ack is the answer (or DEADLINE_EXCEEDED), without one return None at once."""
    pubs = _publications(call, request, streams, time.time_ns())
    for pub in pubs:
        await resume_if_paused(call, pub.target)
    if timeout is None:
        for pub in pubs:
            in_background(await dispatch(call.node, pub, wait=False), pub)
        return None
    waiting = [(pub, asyncio.ensure_future(_sent(call, pub, timeout))) for pub in pubs]
    ack = await _first_ack(waiting, timeout, request.subject)
    ack.msgSubject = request.subject  # the subject published on, as its NATS ack names it
    return ack


def _publications(
    call: RpcCall, request: pb.PublishToSubjectRequest, streams: list[str], received_ns: int
) -> list[Publication]:
    pubs: list[Publication] = []
    for name in streams:
        spec = call.node.replicas.streams[name].record.spec
        for partition in listening_partitions(spec, request.subject):
            one = pb.PublishRequest(
                stream=name,
                partition=partition,
                key=request.key,
                value=request.value,
                headers=request.headers,
                ackPolicy=request.ackPolicy,
                expectedOffset=NO_EXPECTED_OFFSET,  # a subject's publisher expects no offset
            )
            try:
                target = publish_target(call.node, one)
            except StreamReadOnlyError:
                continue
            fields = EnvelopeAck(
                stream=name,
                partition_subject=target.subject,
                msg_subject=request.subject,
                ack_inbox=request.ackInbox,
                correlation_id=request.correlationId,
                ack_policy=request.ackPolicy,
                reception_ns=received_ns,
            )
            pubs.append(Publication(target, request.key, request.value, fields))
    if not pubs:
        raise StreamReadOnlyError(f"every stream recording {request.subject!r} is read-only")
    return pubs


def listening_partitions(spec: StreamSpec, subject: str) -> list[int]:
    """The partitions of ``spec`` a NATS publish on ``subject`` reaches: every one whose
    subject matches, but only one of a load-balanced stream's (a queue group)."""
    matching = [
        p for p in range(spec.partitions) if subject_matches(spec.partition_subject(p), subject)
    ]
    if spec.load_balance and matching:
        return [random.choice(matching)]  # spreading load, as a queue group does
    return matching


async def _sent(call: RpcCall, pub: Publication, timeout: float) -> pb.Ack | None:
    """Dispatch ``pub`` and wait for its ack; a refusal before it left is its failure."""
    waiting: Awaitable[pb.Ack | None] = await dispatch(
        call.node, pub, wait=True, deadline_s=timeout
    )
    return await waiting


async def _first_ack(
    waiting: Sequence[tuple[Publication, asyncio.Future[pb.Ack | None]]],
    timeout: float,
    subject: str,
) -> pb.Ack:
    """The first ack of any partition; the others go on being stored. Every partition
    refusing raises the first refusal."""
    pending = {future: pub for pub, future in waiting}
    refusal: LiftlogError | None = None
    deadline = asyncio.get_running_loop().time() + timeout
    try:
        while pending:
            remaining = deadline - asyncio.get_running_loop().time()
            done, _ = await asyncio.wait(
                pending, timeout=max(remaining, 0.0), return_when=asyncio.FIRST_COMPLETED
            )
            if not done:
                break
            for future in done:
                pending.pop(future)
                exc = future.exception()
                if exc is None and (ack := future.result()) is not None:
                    return ack
                if isinstance(exc, LiftlogError):
                    refusal = refusal or exc
                elif exc is not None:
                    raise exc
    finally:
        for future, pub in pending.items():
            in_background(future, pub)
    if refusal is not None and not pending:
        raise refusal
    raise RequestTimeoutError(f"no ack for the publish on {subject} within {timeout:.3f}s")
