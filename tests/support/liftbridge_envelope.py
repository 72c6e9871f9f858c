"""A Liftbridge client's side of the NATS envelope: publish an enveloped ``Message`` and read
the enveloped ``Ack`` that comes back on its ack inbox."""

from __future__ import annotations

import json
from typing import Any

import nats
from nats.aio.subscription import Subscription

from spark_log.liftbridge import api_pb2 as pb
from spark_log.liftbridge.envelope import decode_ack, encode_publish

ACK_TIMEOUT_S = 10.0


async def ack_inbox(nc: nats.NATS) -> tuple[str, Subscription]:
    """A fresh inbox and its subscription, flushed so the server routes acks to it at once."""
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    await nc.flush()
    return inbox, sub


async def publish_enveloped(
    nc: nats.NATS, subject: str, message: pb.Message, *, crc: bool = False, reply: str = ""
) -> None:
    await nc.publish(subject, encode_publish(message, crc=crc), reply=reply)
    await nc.flush()


async def next_ack(sub: Subscription, timeout_s: float = ACK_TIMEOUT_S) -> pb.Ack:
    """The next message on an ack inbox, which must be an enveloped ``Ack``."""
    msg = await sub.next_msg(timeout=timeout_s)
    return decode_ack(msg.data)


async def json_answer(nc: nats.NATS, subject: str, data: bytes) -> dict[str, Any]:
    """Liftlog's JSON answer to a NATS request (an ack or an error ack)."""
    msg = await nc.request(subject, data, timeout=ACK_TIMEOUT_S)
    answer: dict[str, Any] = json.loads(msg.data)
    return answer
