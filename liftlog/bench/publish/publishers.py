"""The two sides, behind one ``publish(value)``: a Liftlog stream and a JetStream stream.

Both publish one record per NATS message through nats-py and wait for that message's ack, so
a measurement loop is identical for both and only the thing behind the subject differs.
"""

from __future__ import annotations

from typing import Protocol

import nats.errors
from nats.js import JetStreamContext

from liftlog.bench.errors import BenchError
from liftlog.bench.publish.settings import ACK_TIMEOUT_S
from spark_log.client import Client
from spark_log.errors import LiftlogError

# What one failed publish may raise; anything else is a bug and should stop the run.
PUBLISH_ERRORS: tuple[type[BaseException], ...] = (LiftlogError, nats.errors.Error, TimeoutError)


class Publisher(Protocol):
    """Publishes one record as one NATS message and returns once it is acknowledged."""

    label: str

    async def publish(self, value: bytes) -> None: ...


class LiftlogPublisher:
    """``Client.publish`` with the stream's ack policy (``all``: acked after fsync + commit)."""

    def __init__(self, client: Client, stream: str, label: str = "Liftlog") -> None:
        self.label = label
        self._client = client
        self._stream = stream

    async def publish(self, value: bytes) -> None:
        ack = await self._client.publish(self._stream, value, timeout_s=ACK_TIMEOUT_S)
        if ack is None:
            raise BenchError(f"publish to {self._stream} returned no ack (ack policy none?)")


class JetStreamPublisher:
    """``js.publish``: the server's PubAck, after the message is stored (not necessarily synced)."""

    def __init__(self, js: JetStreamContext, subject: str, label: str) -> None:
        self.label = label
        self._js = js
        self._subject = subject

    async def publish(self, value: bytes) -> None:
        await self._js.publish(self._subject, value, timeout=ACK_TIMEOUT_S)
