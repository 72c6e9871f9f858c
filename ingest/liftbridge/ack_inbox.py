"""The inbox a node's forwarded publishes get their acks on: one wildcard subscription.

A publish this node does not lead goes to its leader over NATS, as a Liftbridge publisher's
would, and the leader acks on the inbox the envelope names. One subscription on
``_INBOX.<random>.*`` per NATS connection serves every forwarded publish (each its own last
token), far cheaper than a subscription per publish. The inbox is not under ``_LIFTLOG.``:
the write path drops publishes naming an internal reply subject.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
import weakref

from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from spark_log.errors import LiftlogError, UnavailableError
from spark_log.liftbridge import api_pb2 as pb
from spark_log.liftbridge.envelope import decode_ack, is_envelope
from spark_log.wire import error_from_json, parse_ack

log = logging.getLogger("liftlog.liftbridge")

INBOX_PREFIX = "_INBOX"
INBOX_ID_BYTES = 11


class AckInbox:
    """Routes each ack on the wildcard inbox to the future of the publish that named it."""

    def __init__(self, nc: NatsClient) -> None:
        self._nc = nc
        self.prefix = f"{INBOX_PREFIX}.{secrets.token_hex(INBOX_ID_BYTES)}"
        self._waiting: dict[str, asyncio.Future[pb.Ack]] = {}
        self._tokens = itertools.count()
        self._subscription: Subscription | None = None

    async def open(self) -> None:
        self._subscription = await self._nc.subscribe(
            f"{self.prefix}.*", cb=self._on_ack, pending_msgs_limit=-1, pending_bytes_limit=-1
        )
        await self._nc.flush()

    def reserve(self) -> tuple[str, asyncio.Future[pb.Ack]]:
        """A fresh inbox subject and the future its ack completes (``release`` it after)."""
        subject = f"{self.prefix}.{next(self._tokens)}"
        future: asyncio.Future[pb.Ack] = asyncio.get_running_loop().create_future()
        self._waiting[subject] = future
        return subject, future

    def release(self, subject: str) -> None:
        self._waiting.pop(subject, None)

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    async def _on_ack(self, msg: Msg) -> None:
        future = self._waiting.pop(msg.subject, None)
        if future is None or future.done():
            return
        try:
            future.set_result(read_ack(msg.data))
        except LiftlogError as exc:
            future.set_exception(exc)


def read_ack(data: bytes) -> pb.Ack:
    """An ack as the leader sent it: an Ack envelope, or Liftlog's own JSON ack (then only
    stream and offset are known); a Liftlog error ack raises its typed error."""
    if is_envelope(data):
        return decode_ack(data)
    body = parse_ack(data)
    if "error" in body:
        raise error_from_json(body["error"])
    offset = body.get("offset")
    if not isinstance(offset, int):
        raise UnavailableError(f"the leader's ack names no offset: {data[:200]!r}")
    return pb.Ack(stream=str(body.get("stream", "")), offset=offset)


_inboxes: weakref.WeakKeyDictionary[NatsClient, AckInbox] = weakref.WeakKeyDictionary()
_opening: weakref.WeakKeyDictionary[NatsClient, asyncio.Lock] = weakref.WeakKeyDictionary()


async def ack_inbox(nc: NatsClient) -> AckInbox:
    """The inbox of ``nc``, subscribed on first use."""
    inbox = _inboxes.get(nc)
    if inbox is not None:
        return inbox
    lock = _opening.setdefault(nc, asyncio.Lock())
    async with lock:
        inbox = _inboxes.get(nc)
        if inbox is None:
            inbox = AckInbox(nc)
            await inbox.open()
            _inboxes[nc] = inbox
            log.debug("forwarded publishes are acked on %s.*", inbox.prefix)
    return inbox
