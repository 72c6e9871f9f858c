"""A PublishAsync session's own PublishAsync streams to the leaders it forwards to.

Concurrent unary calls to a leader may be served in any order, but a PublishAsync stream is
served in the order written, so a session forwards through one stream per leader broker,
opened on first use: dispatched in order, stored in order. Each request goes out under the
session's own correlation id (a client's may be empty or repeated) and its answer, ack or
``asyncError``, comes back to the request it answers. A stream that breaks fails what it
still owes at once, and the next publish to that leader opens a new one.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncIterator, Awaitable
from typing import TYPE_CHECKING

import grpc

from ingest.admin.node_view import NodeView
from ingest.liftbridge.peer_channels import forward_metadata, peer_channels
from ingest.liftbridge.peer_errors import error_from_async
from ingest.liftbridge.peer_publish import forwarded_request, peer_refusal
from ingest.liftbridge.publication import Publication
from spark_log.errors import LiftlogError, UnavailableError
from spark_log.liftbridge import api_pb2 as pb

if TYPE_CHECKING:  # the async stub's type exists in the generated .pyi only
    from spark_log.liftbridge.api_pb2_grpc import APIAsyncStub

log = logging.getLogger("liftlog.liftbridge")

CLOSE_TIMEOUT_S = 10.0
"""How long a half-closed stream gets to deliver what it still carries before it is cut."""

_closing: set[asyncio.Task[None]] = set()
"""Half-closed streams still draining (a task nobody holds may be collected)."""


class ForwardedStreams:
    """One session's streams, by leader broker."""

    def __init__(self, node: NodeView) -> None:
        self._node = node
        self._streams: dict[int, ForwardedStream] = {}
        self._ids = itertools.count()

    async def send(self, pub: Publication, wait: bool) -> Awaitable[pb.Ack | None]:
        """Write ``pub`` on its leader's stream; the awaitable yields its ack (None without
        ``wait``: an AckPolicy NONE publish is not answered)."""
        broker = pub.target.leader
        stream = self._streams.get(broker)
        if stream is None or stream.ended:
            stub = await peer_channels(self._node).stub(broker)
            stream = self._streams.get(broker)  # the await let another send open one
            if stream is None or stream.ended:
                stream = ForwardedStream(self._node, broker, stub)
                self._streams[broker] = stream
        return stream.send(pub, str(next(self._ids)), wait)

    def close(self) -> None:
        """Half-close every stream: what they carry still reaches the leaders."""
        for stream in self._streams.values():
            stream.close()
        self._streams.clear()


class ForwardedStream:
    """One PublishAsync call to one leader: a queue feeds its requests, a task reads its
    answers."""

    def __init__(self, node: NodeView, broker: int, stub: APIAsyncStub) -> None:
        self._node = node
        self._broker = broker
        self._requests: asyncio.Queue[pb.PublishRequest | None] = asyncio.Queue()
        self._waiting: dict[str, asyncio.Future[pb.Ack]] = {}
        self.ended = False
        self._call = stub.PublishAsync(self._outgoing(), metadata=forward_metadata(node))
        self._reader = asyncio.ensure_future(self._read())

    def send(self, pub: Publication, correlation_id: str, wait: bool) -> Awaitable[pb.Ack | None]:
        request = forwarded_request(pub)
        request.correlationId = correlation_id
        if not wait:
            self._requests.put_nowait(request)
            return _nothing()
        future: asyncio.Future[pb.Ack] = asyncio.get_running_loop().create_future()
        self._waiting[correlation_id] = future
        self._requests.put_nowait(request)
        return self._acked(pub, correlation_id, future)

    def close(self) -> None:
        self._requests.put_nowait(None)
        task = asyncio.ensure_future(self._drain())
        _closing.add(task)
        task.add_done_callback(_closing.discard)

    async def _drain(self) -> None:
        try:
            await asyncio.wait_for(asyncio.shield(self._reader), CLOSE_TIMEOUT_S)
        except TimeoutError:
            self._call.cancel()

    async def _acked(
        self, pub: Publication, correlation_id: str, future: asyncio.Future[pb.Ack]
    ) -> pb.Ack:
        try:
            ack = await future
        finally:
            self._waiting.pop(correlation_id, None)
        ack.correlationId = pub.fields.correlation_id  # the client's, not the session's
        return ack

    async def _outgoing(self) -> AsyncIterator[pb.PublishRequest]:
        while (request := await self._requests.get()) is not None:
            yield request

    async def _read(self) -> None:
        failure: LiftlogError = UnavailableError(
            f"broker {self._broker} ended the stream of forwarded publishes"
        )
        try:
            async for response in self._call:
                self._answer(response)
        except grpc.aio.AioRpcError as exc:
            failure = peer_refusal(self._node, self._broker, exc)
            log.debug("forwarded PublishAsync to broker %s broke: %s", self._broker, failure)
        finally:
            self.ended = True
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(failure)
            self._waiting.clear()

    def _answer(self, response: pb.PublishResponse) -> None:
        future = self._waiting.pop(response.correlationId, None)
        if future is None or future.done():
            return  # a refused AckPolicy NONE publish, or one its session gave up on
        if response.HasField("asyncError"):
            future.set_exception(error_from_async(response.asyncError))
        else:
            future.set_result(response.ack)


async def _nothing() -> None:
    return None
