"""PublishAsync: a long-lived stream of publishes, each answered on its own.

Requests are read while earlier ones wait for their acks (clients keep hundreds in flight), so
answers come in completion order, each with its request's ``correlationId``. Every refusal
(authorization, a check, the leader's) is an ``asyncError`` on the stream, which goes on; an
AckPolicy NONE publish gets no answer. When the client half-closes, the acks still in flight
get a few seconds, then the stream ends.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable

import nats.errors

from ingest.liftbridge.acks import async_refusal
from ingest.liftbridge.calls import RpcCall
from ingest.liftbridge.peer_channels import is_forwarded
from ingest.liftbridge.peer_streams import ForwardedStreams
from ingest.liftbridge.publication import Publication
from ingest.liftbridge.publish_checks import PublishTarget, publish_target
from ingest.liftbridge.publish_path import dispatch, within
from ingest.liftbridge.publish_resume import resume_if_paused
from ingest.produce.envelope_acks import EnvelopeAck
from spark_log.errors import LiftlogError, UnavailableError
from spark_log.liftbridge import api_pb2 as pb

log = logging.getLogger("liftlog.liftbridge")

ACK_TIMEOUT_S = 30.0
"""How long one publish of the stream waits for its ack before it is answered as failed."""
DRAIN_TIMEOUT_S = 5.0
"""How long the acks in flight get once the client half-closed (Liftbridge's as well)."""
MAX_IN_FLIGHT = 4096
"""Publishes waiting for their acks at most: reading further requests waits below it."""

_END = None


class PublishAsyncSession:
    """One PublishAsync call: a reader task takes requests, a task per publish waits for
    its ack, and the answers queue up for the call to send."""

    def __init__(self, call: RpcCall) -> None:
        self._call = call
        self._answers: asyncio.Queue[pb.PublishResponse | None] = asyncio.Queue()
        self._in_flight: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(MAX_IN_FLIGHT)
        self._forwarded = is_forwarded(call.context)
        self._streams = ForwardedStreams(call.node)

    async def run(
        self, requests: AsyncIterator[pb.PublishRequest]
    ) -> AsyncIterator[pb.PublishResponse]:
        reader = asyncio.ensure_future(self._read(requests))
        reader.add_done_callback(_reader_ended)
        try:
            while (answer := await self._answers.get()) is not _END:
                yield answer
        finally:
            reader.cancel()
            for task in list(self._in_flight):
                task.cancel()
            self._streams.close()

    async def _read(self, requests: AsyncIterator[pb.PublishRequest]) -> None:
        try:
            async for request in requests:
                await self._slots.acquire()
                await self._accept(request)
            if self._in_flight:
                await asyncio.wait(set(self._in_flight), timeout=DRAIN_TIMEOUT_S)
        finally:
            self._answers.put_nowait(_END)

    async def _accept(self, request: pb.PublishRequest) -> None:
        """Check ``request`` and put it on its way before the next one is read, so that a
        stream's publishes are stored in the order sent (as Liftbridge stores them); a task
        per publish then waits for its ack, and a refusal is answered at once."""
        received_ns = time.time_ns()
        try:
            if request.stream:
                self._call.authorize(request)  # the RPC table's rule, request by request
            target = publish_target(self._call.node, request)
            await resume_if_paused(self._call, target)
            fields = _fields(request, target, received_ns)
            pub = Publication(target, request.key, request.value, fields, self._forwarded)
            waiting = await dispatch(
                self._call.node, pub, wait=target_acks(pub), streams=self._streams
            )
        except LiftlogError as exc:
            self._refuse(request, exc)
            return
        except (nats.errors.Error, OSError) as exc:  # the node's NATS connection or a socket
            self._refuse(request, UnavailableError(f"the publish could not be sent on: {exc}"))
            return
        timeout = ACK_TIMEOUT_S if target_acks(pub) else None
        task = asyncio.ensure_future(self._answer(request, pub, waiting, timeout))
        self._in_flight.add(task)
        task.add_done_callback(self._done)

    def _refuse(self, request: pb.PublishRequest, exc: LiftlogError) -> None:
        """An ``asyncError`` for ``request`` now; the stream goes on."""
        self._slots.release()
        self._answers.put_nowait(async_refusal(request.correlationId, exc))

    def _done(self, task: asyncio.Task[None]) -> None:
        self._in_flight.discard(task)
        self._slots.release()

    async def _answer(
        self,
        request: pb.PublishRequest,
        pub: Publication,
        waiting: Awaitable[pb.Ack | None],
        timeout: float | None,
    ) -> None:
        try:
            ack = await (waiting if timeout is None else within(waiting, timeout, pub))
        except LiftlogError as exc:
            self._answers.put_nowait(async_refusal(request.correlationId, exc))
            return
        if ack is not None and timeout is not None:
            self._answers.put_nowait(
                pb.PublishResponse(ack=ack, correlationId=request.correlationId)
            )


def _fields(request: pb.PublishRequest, target: PublishTarget, received_ns: int) -> EnvelopeAck:
    return EnvelopeAck(
        stream=target.spec.name,
        partition_subject=target.subject,
        msg_subject=target.subject,
        ack_inbox="",
        correlation_id=request.correlationId,
        ack_policy=request.ackPolicy,
        reception_ns=received_ns,
    )


def target_acks(pub: Publication) -> bool:
    """AckPolicy NONE gets no answer on the stream (Liftbridge's PublishAsync sends none)."""
    return pub.target.ack_policy != "none"


def _reader_ended(reader: asyncio.Task[None]) -> None:
    """The client went away mid-stream (its reads fail): nothing to answer any more."""
    if not reader.cancelled() and (exc := reader.exception()) is not None:
        log.debug("PublishAsync ended by its client: %r", exc)
