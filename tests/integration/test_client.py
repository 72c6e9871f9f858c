"""spark_log.Client on a real node: subscribe from earliest/latest/offset/time, admin calls."""

from __future__ import annotations

import asyncio
import datetime as dt
import time

import pytest

from spark_log.client import Client, partition_for_key
from spark_log.errors import InvalidRequestError, StreamExistsError, StreamNotFoundError


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
        boundary = dt.datetime.now(dt.UTC)
        boundary_ms = int(boundary.timestamp() * 1000)
        while int(time.time() * 1000) <= boundary_ms:  # leader timestamps have ms resolution
            pass
        for i in range(5):
            await client.publish(stream_name, f"new-{i}")

        earliest = await _take(client, stream_name, "earliest", 10)
        assert [r.offset for r in earliest] == list(range(10))
        from_offset = await _take(client, stream_name, 7, 3)
        assert [r.value for r in from_offset] == [b"new-2", b"new-3", b"new-4"]
        by_time = await _take(client, stream_name, boundary, 1)
        assert by_time[0].value == b"new-0"

        latest_task = asyncio.create_task(_take(client, stream_name, "latest", 2))
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
        assert len(created["partitions"]) == 4
        again = await client.create_stream(stream_name, f"{stream_name}.in", partitions=4)
        assert again["name"] == stream_name
        with pytest.raises(StreamExistsError):
            await client.create_stream(stream_name, f"{stream_name}.in", partitions=2)
        assert stream_name in [s["name"] for s in await client.list_streams()]
        ack = await client.publish(stream_name, b"v", key="customer-1")
        assert ack.partition == partition_for_key(b"customer-1", 4)
        with pytest.raises(InvalidRequestError):
            await client.publish(stream_name, b"v", partition=9)
        paused = await client.pause_stream(stream_name)
        assert paused["paused"] is True
        await client.resume_stream(stream_name)
        await client.delete_stream(stream_name)
        with pytest.raises(StreamNotFoundError):
            await client.describe_stream(stream_name)
        with pytest.raises(StreamNotFoundError):
            await client.publish(stream_name, b"v")
