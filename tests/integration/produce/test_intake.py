"""The leaders' NATS intake against a real nats-server: batches in, acks out, a server killed
and restarted under it, and queue groups."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import nats
import pytest
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from ingest.produce.intake import IntakeConnection, IntakeSettings
from ingest.produce.nats_frames import InboundMessage
from liftlog.embedded.nats import NatsServer
from liftlog.embedded.ports import free_port
from tests.support.jepsen.proxy import LinkProxy
from tests.support.waiting import wait_for_async

TIMEOUT_S = 30.0
MESSAGES = 500


@pytest.fixture
def server(tmp_path: Path) -> Iterator[NatsServer]:
    """A nats-server of the test's own, so that it can be killed."""
    nats_server = NatsServer(free_port(), tmp_path / "nats").start()
    try:
        yield nats_server
    finally:
        nats_server.stop()


@pytest.fixture
async def publisher(server: NatsServer) -> AsyncIterator[NatsClient]:
    nc = await nats.connect(server.url, reconnect_time_wait=0.1, max_reconnect_attempts=-1)
    try:
        yield nc
    finally:
        await nc.close()


def _intake(url: str, on_disconnect: Callable[[], None] = lambda: None) -> IntakeConnection:
    settings = IntakeSettings(servers=(url,), name="test-intake", reconnect_wait_s=0.1)
    return IntakeConnection(settings, on_disconnect)


class Acks:
    """The publisher's inbox: every ack it received, by its reply subject's last token."""

    def __init__(self) -> None:
        self.received: dict[str, bytes] = {}

    async def on_ack(self, msg: Msg) -> None:
        self.received[msg.subject.rsplit(".", 1)[1]] = msg.data


class Answering:
    """A subscriber that acks every message it is handed, and remembers the batches."""

    def __init__(self, intake: IntakeConnection) -> None:
        self.intake = intake
        self.batches: list[list[InboundMessage]] = []

    def __call__(self, messages: list[InboundMessage]) -> None:
        self.batches.append(messages)
        for message in messages:
            self.intake.publish(message.reply, b"ack:" + message.data)

    @property
    def values(self) -> list[bytes]:
        return [m.data for batch in self.batches for m in batch]


async def _publish(nc: NatsClient, subject: str, values: list[bytes]) -> None:
    for value in values:
        await nc.publish(subject, value, reply=f"_INBOX.test.{value.decode()}")
    await nc.flush()


@contextlib.asynccontextmanager
async def _answering(
    server: NatsServer, publisher: NatsClient
) -> AsyncIterator[tuple[IntakeConnection, Answering, Acks]]:
    """An intake answering every message on ``orders.in``, and the publisher's inbox."""
    acks = Acks()
    await publisher.subscribe("_INBOX.test.*", cb=acks.on_ack)
    intake = _intake(server.url)
    await intake.connect()
    try:
        answering = Answering(intake)
        intake.subscribe("orders.in", "", answering)
        await intake.flush(TIMEOUT_S)
        yield intake, answering, acks
    finally:
        await intake.close()


async def test_messages_arrive_in_batches_and_every_ack_reaches_its_inbox(
    server: NatsServer, publisher: NatsClient
) -> None:
    async with _answering(server, publisher) as (_, answering, acks):
        values = [str(i).encode() for i in range(MESSAGES)]
        await _publish(publisher, "orders.in", values)
        await wait_for_async(lambda: len(acks.received) == MESSAGES, TIMEOUT_S, message="acks")
        assert answering.values == values  # in order, each once
        assert any(len(batch) > 1 for batch in answering.batches)
        assert acks.received == {v.decode(): b"ack:" + v for v in values}


async def test_a_killed_server_is_reconnected_to_with_the_subscriptions(
    server: NatsServer, publisher: NatsClient
) -> None:
    async with _answering(server, publisher) as (intake, answering, acks):
        await _publish(publisher, "orders.in", [b"before"])
        await wait_for_async(lambda: "before" in acks.received, TIMEOUT_S, message="first ack")

        server.kill()
        await wait_for_async(lambda: not intake.is_connected, TIMEOUT_S, message="loss seen")
        server.start()
        await wait_for_async(lambda: intake.is_connected, TIMEOUT_S, message="reconnected")
        await wait_for_async(lambda: publisher.is_connected, TIMEOUT_S, message="publisher back")
        await publisher.flush()  # its inbox subscription is back on the new server
        await intake.flush(TIMEOUT_S)  # and so is the intake's
        await _publish(publisher, "orders.in", [b"after"])
        await wait_for_async(lambda: "after" in acks.received, TIMEOUT_S, message="new ack")
        assert answering.values == [b"before", b"after"]
        assert intake.reconnects == 1


async def test_acks_made_while_cut_off_are_sent_once_reconnected(
    server: NatsServer, publisher: NatsClient
) -> None:
    acks = Acks()
    await publisher.subscribe("_INBOX.test.*", cb=acks.on_ack)
    await publisher.flush()
    losses: list[None] = []
    with LinkProxy(server.host, server.port, name="intake") as proxy:
        intake = _intake(f"nats://{proxy.address}", lambda: losses.append(None))
        await intake.connect()
        try:
            proxy.reset()  # the intake's connection is reset, and every new one until pass_
            await wait_for_async(lambda: not intake.is_connected, TIMEOUT_S, message="cut off")
            intake.publish("_INBOX.test.held", b"ack:held")
            assert "held" not in acks.received
            proxy.pass_()
            await wait_for_async(lambda: "held" in acks.received, TIMEOUT_S, message="held ack")
            assert acks.received["held"] == b"ack:held" and intake.reconnects >= 1
            assert len(losses) == intake.reconnects  # failed attempts are not losses
        finally:
            await intake.close()


async def test_a_queue_group_shares_the_messages_between_intakes(
    server: NatsServer, publisher: NatsClient
) -> None:
    acks = Acks()
    await publisher.subscribe("_INBOX.test.*", cb=acks.on_ack)
    intakes = [_intake(server.url), _intake(server.url)]
    answering = [Answering(intake) for intake in intakes]
    for intake, answer in zip(intakes, answering, strict=True):
        await intake.connect()
        intake.subscribe("orders.in", "workers", answer)
        await intake.flush(TIMEOUT_S)
    try:
        values = [str(i).encode() for i in range(MESSAGES)]
        await _publish(publisher, "orders.in", values)
        await wait_for_async(lambda: len(acks.received) == MESSAGES, TIMEOUT_S, message="acks")
        seen = [answer.values for answer in answering]
        assert sorted(seen[0] + seen[1]) == sorted(values)  # each message to one of them
    finally:
        await asyncio.gather(*(intake.close() for intake in intakes))


async def test_an_unsubscribed_subject_is_no_longer_delivered(
    server: NatsServer, publisher: NatsClient
) -> None:
    intake = _intake(server.url)
    await intake.connect()
    try:
        answering = Answering(intake)
        sid = intake.subscribe("orders.in", "", answering)
        barrier = Answering(intake)
        intake.subscribe("barrier.in", "", barrier)
        intake.unsubscribe(sid)
        await intake.flush(TIMEOUT_S)
        await _publish(publisher, "orders.in", [b"gone"])
        await _publish(publisher, "barrier.in", [b"barrier"])  # delivered after it, in order
        await wait_for_async(lambda: barrier.values, TIMEOUT_S, message="the barrier")
        assert answering.values == []
    finally:
        await intake.close()
