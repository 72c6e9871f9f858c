"""The same publisher code on both sides: a plain NATS publish with a reply inbox per record.

Any NATS client can send this to a Liftlog stream's subject or to a JetStream stream's: the
reply is Liftlog's ack or JetStream's PubAck, each JSON. Neither side's client library runs,
so what differs between the two figures is the server side alone. Replies come back on one
wildcard inbox subscription per connection and are matched to their request by the inbox's
last token, as nats-py's own request multiplexer does, without a per-request subscription.
"""

from __future__ import annotations

import asyncio
import itertools

from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from liftlog.bench.publish.settings import ACK_TIMEOUT_S
from spark_log.errors import LiftlogError

ERROR_MARK = b'"error"'
"""Both sides' refusals are JSON with an ``error`` member (Liftlog's ack, JetStream's PubAck)."""


class PlainRequestError(LiftlogError):
    """A plain request was answered with an error by the stream."""

    code = "plain_request_refused"


class ReplyInbox:
    """One wildcard subscription that routes each reply to the future of its request."""

    def __init__(self, nc: NatsClient, prefix: str) -> None:
        self._nc = nc
        self._prefix = prefix
        self._waiting: dict[str, asyncio.Future[bytes]] = {}
        self._tokens = itertools.count()
        self._subscription: Subscription | None = None

    async def open(self) -> ReplyInbox:
        self._subscription = await self._nc.subscribe(f"{self._prefix}.*", cb=self._on_reply)
        await self._nc.flush()
        return self

    async def close(self) -> None:
        if self._subscription is not None:
            await self._subscription.unsubscribe()

    async def request(self, subject: str, payload: bytes) -> bytes:
        reply = f"{self._prefix}.{next(self._tokens)}"
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._waiting[reply] = future
        try:
            await self._nc.publish(subject, payload, reply=reply)
            return await asyncio.wait_for(future, ACK_TIMEOUT_S)
        finally:
            self._waiting.pop(reply, None)

    async def _on_reply(self, msg: Msg) -> None:
        future = self._waiting.get(msg.subject)
        if future is not None and not future.done():
            future.set_result(msg.data)


class PlainRequestPublisher:
    """Publishes one record as a plain request on ``subject`` and waits for its reply."""

    def __init__(self, inbox: ReplyInbox, subject: str, label: str) -> None:
        self.label = label
        self._inbox = inbox
        self._subject = subject

    async def publish(self, value: bytes) -> None:
        reply = await self._inbox.request(self._subject, value)
        if ERROR_MARK in reply:
            raise PlainRequestError(f"{self._subject}: {reply[:200]!r}")
