"""spark_log.Client on a real node: subscribe from earliest/latest/new-only/offset/time, admin
calls."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
import time

import psutil
import pytest

from spark_log import SyncClient
from spark_log.api_models import (
    Ack,
    ClusterInfo,
    FlushResult,
    ReassignmentStatus,
    StreamDescription,
    StreamSummary,
)
from spark_log.client.client import Client, partition_for_key
from spark_log.errors import (
    ExpectedOffsetMismatchError,
    InvalidRequestError,
    NoReassignmentError,
    NoRespondersError,
    PartitionNotFoundError,
    RequestTimeoutError,
    StreamExistsError,
    StreamNotFoundError,
    StreamPausedError,
    UnavailableError,
)
from tests.integration.conftest import node_client
from tests.support.waiting import wait_for_async


async def _take(client: Client, stream: str, start, n: int, partition: int = 0) -> list:
    out = []
    async for record in client.subscribe(stream, partition, start, poll_wait_ms=200):
        out.append(record)
        if len(out) == n:
            return out
    return out


async def test_subscribe_from_every_start(node, stream_name):
    async with Client(node.api_url) as client:
        await client.create_stream(stream_name, f"{stream_name}.in")
        for i in range(5):
            await client.publish(stream_name, f"old-{i}")
        # Every old record was stamped at or before the millisecond its ack came back in, so
        # the first millisecond after it is a boundary the old ones are all below; the new
        # ones are published only once the clock has reached it (ms resolution).
        acked_ms = int(time.time() * 1000)
        boundary = dt.datetime.fromtimestamp((acked_ms + 1) / 1000, dt.UTC)
        while int(time.time() * 1000) <= acked_ms:
            pass
        for i in range(5):
            await client.publish(stream_name, f"new-{i}")

        earliest = await _take(client, stream_name, "earliest", 10)
        assert [r.offset for r in earliest] == list(range(10))
        from_offset = await _take(client, stream_name, 7, 3)
        assert [r.value for r in from_offset] == [b"new-2", b"new-3", b"new-4"]
        by_time = await _take(client, stream_name, boundary, 1)
        assert by_time[0].value == b"new-0"

        by_latest = await _take(client, stream_name, "latest", 1)
        assert [(r.offset, r.value) for r in by_latest] == [(9, b"new-4")]  # the last, inclusive

        latest_task = asyncio.create_task(_take(client, stream_name, "new-only", 2))
        # records published after the subscription started are the only ones it sees
        ack = await client.publish(stream_name, "live-0")
        while not latest_task.done():
            ack = await client.publish(stream_name, f"live-{ack.offset}")
            await asyncio.wait([latest_task], timeout=0.2)
        live = latest_task.result()
        assert all(r.offset >= 10 for r in live)
        assert [r.offset for r in live] == [live[0].offset, live[0].offset + 1]


async def test_admin_calls_and_typed_errors(node, stream_name):
    async with Client(node.api_url) as client:
        created = await client.create_stream(stream_name, f"{stream_name}.in", partitions=4)
        assert len(created.partitions) == 4
        again = await client.create_stream(stream_name, f"{stream_name}.in", partitions=4)
        assert again.name == stream_name
        with pytest.raises(StreamExistsError):
            await client.create_stream(stream_name, f"{stream_name}.in", partitions=2)
        assert stream_name in [s.name for s in await client.list_streams()]
        ack = await client.publish(stream_name, b"v", key="customer-1")
        assert ack.partition == partition_for_key(b"customer-1", 4)
        with pytest.raises(InvalidRequestError):
            await client.publish(stream_name, b"v", partition=9)
        paused = await client.pause_stream(stream_name)
        assert paused.paused is True
        await client.resume_stream(stream_name)
        await client.delete_stream(stream_name)
        with pytest.raises(StreamNotFoundError):
            await client.describe_stream(stream_name)
        with pytest.raises(StreamNotFoundError):
            await client.publish(stream_name, b"v")


async def test_admin_calls_return_the_shared_models(node, stream_name):
    async with Client(node.api_url) as client:
        created = await client.create_stream(stream_name, f"{stream_name}.in", partitions=2)
        assert isinstance(created, StreamDescription)
        assert [p.partition for p in created.partitions] == [0, 1]
        assert created.spec.partitions == 2 and created.partition(1).leader == 1
        batch = await client.publish_batch(stream_name, [b"a", b"b"], partition=1)
        assert batch == Ack(stream_name, 1, 0, count=2, duplicate=False)
        described = await client.describe_stream(stream_name)
        assert described.partition(1).high_watermark == 2
        assert described.partition(1).isr == (1,)
        listed = await client.list_streams()
        assert all(isinstance(s, StreamSummary) for s in listed)
        assert stream_name in [s.name for s in listed]
        cluster = await client.cluster()
        assert isinstance(cluster, ClusterInfo)
        assert cluster.api_urls() == {1: node.api_url}
        assert cluster.controller == 1
        flushed = await client.flush_stream(stream_name)
        assert isinstance(flushed, FlushResult)
        assert {p.partition: p.lake_offset for p in flushed.partitions} == {0: 0, 1: 2}


async def test_duplicate_publishes_are_acked_as_duplicates(node, stream_name):
    async with Client(node.api_url) as client:
        await client.create_stream(stream_name, f"{stream_name}.in")
        first = await client.publish(stream_name, b"pay", msg_id="payment-1")
        again = await client.publish(stream_name, b"pay", msg_id="payment-1")
        assert first.duplicate is False
        assert again.duplicate is True and again.offset == first.offset


def _connections_to(port: int) -> int:
    """This process's open TCP connections to ``port``."""
    return sum(
        1
        for c in psutil.Process().net_connections(kind="tcp")
        if c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED
    )


async def test_concurrent_first_publishes_share_one_nats_connection(node, nats_server, stream_name):
    """Connections made by racing first publishes and then dropped would never be closed."""
    before = _connections_to(nats_server.port)
    async with Client(node.api_url) as client:
        await client.create_stream(stream_name, f"{stream_name}.in")
        await asyncio.gather(*(client.publish(stream_name, f"v{i}") for i in range(8)))
        assert _connections_to(nats_server.port) == before + 1
    await wait_for_async(lambda: _connections_to(nats_server.port) == before, 10)


async def test_error_acks_become_typed_errors(node, stream_name):
    async with Client(node.api_url) as client:
        await client.create_stream(stream_name, f"{stream_name}.in")
        await client.publish(stream_name, b"zero")
        with pytest.raises(ExpectedOffsetMismatchError) as mismatch:
            await client.publish(stream_name, b"v", expected_offset=5)
        assert mismatch.value.code == "expected_offset_mismatch"
        await client.pause_stream(stream_name)
        with pytest.raises(StreamPausedError) as paused:
            await client.publish(stream_name, b"while paused", timeout_s=5)
        assert paused.value.code == "stream_paused"
        await client.resume_stream(stream_name)
        assert (await client.publish(stream_name, b"one")).offset == 1


async def test_no_responders_is_a_typed_error_naming_the_subject(node, stream_name):
    subject = f"{stream_name}.in"
    no_retries = Client(node.api_url, delivery_timeout_s=0)
    async with no_retries as client, Client(node.api_url) as admin:
        await client.create_stream(stream_name, subject)
        await client.publish(stream_name, b"v")  # caches the spec: the client keeps publishing
        await admin.delete_stream(stream_name)
        error = await _publish_until_no_responders(client, stream_name)
        assert error.code == "no_responders"
        assert subject in error.message and "describe" in error.message
        assert "malformed" not in error.message


async def test_a_publish_nobody_hears_is_retried_until_a_leader_listens(node, stream_name):
    """No-responders stored nothing: the client publishes again with a backoff, so a partition
    that gets a listening leader within ``delivery_timeout_s`` costs latency, not an error."""
    subject = f"{stream_name}.in"
    async with (
        Client(node.api_url) as client,
        Client(node.api_url, delivery_timeout_s=0) as probe,
        Client(node.api_url) as admin,
    ):
        await admin.create_stream(stream_name, subject)
        await client.publish(stream_name, b"first")  # caches the spec, as a producer does
        await probe.publish(stream_name, b"first")
        await admin.delete_stream(stream_name)
        await _publish_until_no_responders(probe, stream_name)
        publish = asyncio.create_task(client.publish(stream_name, b"retried"))
        await admin.create_stream(stream_name, subject)
        ack = await publish
        assert ack is not None and (ack.offset, ack.duplicate) == (0, False)


async def test_retries_end_at_the_delivery_timeout(node, stream_name):
    """A partition that never gets a leader: the last no-responders after the delivery timeout
    reaches the caller."""
    async with (
        Client(node.api_url, delivery_timeout_s=0.5) as client,
        Client(node.api_url, delivery_timeout_s=0) as probe,
        Client(node.api_url) as admin,
    ):
        await admin.create_stream(stream_name, f"{stream_name}.in")
        await client.publish(stream_name, b"v")
        await probe.publish(stream_name, b"v")
        await admin.delete_stream(stream_name)
        await _publish_until_no_responders(probe, stream_name)
        started = time.monotonic()
        with pytest.raises(NoRespondersError):
            await client.publish(stream_name, b"never stored", timeout_s=1)
        # 50 + 100 + 200 ms of backoff fit in 0.5 s; the next 400 ms would not
        assert time.monotonic() - started >= 0.35


async def _publish_until_no_responders(client: Client, stream: str) -> NoRespondersError:
    """The node unsubscribes as it deletes; until NATS has seen that, a publish times out."""
    deadline = time.monotonic() + 15
    while True:
        try:
            await client.publish(stream, b"v", timeout_s=1)
        except NoRespondersError as exc:
            return exc
        except RequestTimeoutError:
            pass
        assert time.monotonic() < deadline, "no no-responders reply within 15s"


async def test_subscriptions_end_at_the_end_or_after_max_records(node, stream_name):
    async with Client(node.api_url) as client:
        await client.create_stream(stream_name, f"{stream_name}.in")
        await client.publish_batch(stream_name, [f"v{i}" for i in range(7)])
        to_end = [r.offset async for r in client.subscribe(stream_name, stop_at_end=True)]
        assert to_end == list(range(7))
        three = client.subscribe(stream_name, start=2, max_records=3, fetch_max_records=2)
        assert [r.offset async for r in three] == [2, 3, 4]
        both = client.subscribe(stream_name, start=5, max_records=10, stop_at_end=True)
        assert [r.offset async for r in both] == [5, 6]
        at_end = client.subscribe(stream_name, start="new-only", stop_at_end=True)
        assert [r async for r in at_end] == []
        last = client.subscribe(stream_name, start="latest", stop_at_end=True)
        assert [r.offset async for r in last] == [6]
        with pytest.raises(InvalidRequestError):
            [r async for r in client.subscribe(stream_name, max_records=-1)]


async def test_reassignment_calls_and_a_cancel_with_nothing_pending(node, stream_name):
    async with Client(node.api_url) as client:
        await client.create_stream(stream_name, f"{stream_name}.in", partitions=2)
        submitted = await client.reassign(stream_name, {0: [1]})  # already there: no-op
        assert isinstance(submitted, ReassignmentStatus) and submitted.stream == stream_name

        pending_path = f"/v1/streams/{stream_name}/reassign"
        with node_client(node.api_url, timeout=10) as api:
            await wait_for_async(
                lambda: not api.get(pending_path).json()["partitions"],
                30,
                message="the no-op reassignment finished",
            )
        assert (await client.reassignment_status(stream_name)).partitions == ()
        with pytest.raises(NoReassignmentError, match="no reassignment in progress"):
            await client.cancel_reassignment(stream_name)
        with pytest.raises(NoReassignmentError, match="partition 1"):
            await client.cancel_reassignment(stream_name, 1)
        with pytest.raises(PartitionNotFoundError):
            await client.cancel_reassignment(stream_name, 7)
        with pytest.raises(StreamNotFoundError):
            await client.cancel_reassignment(f"{stream_name}-missing")
    with SyncClient(node.api_url) as sync:
        assert sync.reassignment_status(stream_name).partitions == ()
        with pytest.raises(NoReassignmentError):
            sync.cancel_reassignment(stream_name, 0)


def test_sync_client_runs_every_operation_without_asyncio(node, stream_name):
    with SyncClient(node.api_url) as client:
        created = client.create_stream(stream_name, f"{stream_name}.in", partitions=2)
        assert len(created.partitions) == 2
        ack = client.publish(stream_name, b"one", partition=0)
        assert ack == Ack(stream_name, 0, 0)
        batch = client.publish_batch(stream_name, [b"two", b"three"], partition=0)
        assert (batch.offset, batch.count) == (1, 2)
        records = client.subscribe(stream_name, 0, start=ack.offset, stop_at_end=True)
        assert [r.value for r in records] == [b"one", b"two", b"three"]
        assert [r.offset for r in client.subscribe(stream_name, max_records=2)] == [0, 1]
        assert client.fetch(stream_name, 0, 1, max_records=1).records[0].value == b"two"
        assert client.describe_stream(stream_name).partition(0).high_watermark == 3
        assert stream_name in [s.name for s in client.list_streams()]
        assert client.cluster().brokers[0].api_url == node.api_url
        assert client.pause_stream(stream_name).paused is True
        assert client.resume_stream(stream_name).paused is False
        client.delete_stream(stream_name)
        with pytest.raises(StreamNotFoundError):
            client.describe_stream(stream_name)
    assert not [t for t in threading.enumerate() if t.name == "liftlog-sync-client"]


def test_sync_subscription_can_be_closed_while_following(node, stream_name):
    with SyncClient(node.api_url) as client:
        client.create_stream(stream_name, f"{stream_name}.in")
        client.publish(stream_name, b"first")
        live = client.subscribe(stream_name, poll_wait_ms=100)  # unbounded: a live tail
        assert next(live).value == b"first"
        live.close()
        assert list(live) == []
    with pytest.raises(UnavailableError):
        client.describe_stream(stream_name)  # closed clients say so


async def test_discovered_nats_url_is_rediscovered_after_its_server_dies(tmp_path):
    """The client learns the NATS URL from the cluster, keeps it apart from the user's
    ``nats_url``, and after the discovered server dies for good it asks the cluster again."""
    from liftlog.embedded.nats import NatsServer
    from liftlog.embedded.ports import free_port
    from spark_log.api_models import BrokerInfo

    first = NatsServer(free_port(), tmp_path / "a")
    second = NatsServer(free_port(), tmp_path / "b")
    first.start()
    second.start()
    current = [first]

    async def cluster() -> ClusterInfo:
        server = current[0]
        return ClusterInfo(brokers=(BrokerInfo(1, "127.0.0.1", "http://127.0.0.1:1", server.url),))

    client = Client("http://127.0.0.1:1")
    client.cluster = cluster  # type: ignore[method-assign]  # the cluster's answer, not NATS
    try:
        await client.max_payload()
        assert client.nats_url is None  # the user's setting is untouched
        assert client._nc is not None and client._nc.connected_url.port == first.port
        first.stop()
        current[0] = second
        await wait_for_async(
            lambda: client._nc.is_closed, 30, message="the client to give up on the dead server"
        )
        await client.max_payload()
        assert client._nc.connected_url.port == second.port
        assert client.nats_url is None
    finally:
        await client.close()
        first.stop()
        second.stop()
