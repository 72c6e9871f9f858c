"""kill -9 of a node while publishing with fsync=always: nothing acknowledged is lost."""

from __future__ import annotations

import asyncio
import os
from collections import Counter

import httpx

from spark_log.client import Client
from spark_log.config import LogConfig
from spark_log.errors import LiftlogError
from tests.integration.conftest import create_stream
from tests.support.rest_records import read_all_records
from tests.support.waiting import wait_for

PUBLISHERS = 32
ACKED_BEFORE_KILL = 3000


async def _publisher(
    client: Client,
    stream: str,
    worker: int,
    acked: dict[str, int],
    stop: asyncio.Event,
    enough: asyncio.Event,
) -> None:
    seq = 0
    while not stop.is_set():
        value = f"w{worker}-{seq}"
        seq += 1
        try:
            ack = await client.publish(stream, value, timeout_s=2)
        except LiftlogError:
            continue  # not acknowledged: may or may not be stored
        acked[value] = ack.offset
        if len(acked) >= ACKED_BEFORE_KILL:
            enough.set()


async def test_kill9_while_publishing_loses_nothing_acknowledged(make_node, stream_name):
    node = make_node(log=LogConfig(fsync="always", segment_bytes=256 * 1024))
    with httpx.Client(base_url=node.api_url, timeout=30) as api:
        create_stream(api, stream_name)
    acked: dict[str, int] = {}
    stop, enough = asyncio.Event(), asyncio.Event()
    async with Client(node.api_url, ack_timeout_s=2) as client:
        workers = [
            asyncio.create_task(_publisher(client, stream_name, w, acked, stop, enough))
            for w in range(PUBLISHERS)
        ]
        await asyncio.wait_for(enough.wait(), 60)
        node.kill()  # SIGKILL mid-stream: no flush, no clean shutdown
        acked_at_kill = dict(acked)
        stop.set()
        await asyncio.gather(*workers)
    assert not node.is_running()
    node.start()
    with httpx.Client(base_url=node.api_url, timeout=30) as api:
        records = read_all_records(api, stream_name)
    by_value = {r["value"]: r["offset"] for r in records}
    counts = Counter(r["value"] for r in records)
    assert [r["offset"] for r in records] == list(range(len(records)))  # dense
    for value, offset in acked_at_kill.items():
        assert by_value.get(value) == offset, f"acked {value}@{offset} lost or moved"
        assert counts[value] == 1
    assert len(acked_at_kill) >= ACKED_BEFORE_KILL


async def test_dedup_window_survives_restart(make_node, stream_name):
    node = make_node()
    with httpx.Client(base_url=node.api_url, timeout=30) as api:
        create_stream(api, stream_name)
    async with Client(node.api_url) as client:
        first = await client.publish(stream_name, b"pay-42", msg_id="payment-42")
        batch = await client.publish_batch(stream_name, [b"a", b"b", b"c"], msg_id="batch-9")
    node.kill()
    node.start()
    async with Client(node.api_url) as client:
        again = await client.publish(stream_name, b"pay-42", msg_id="payment-42")
        batch_again = await client.publish_batch(stream_name, [b"a", b"b", b"c"], msg_id="batch-9")
        fresh = await client.publish(stream_name, b"new")
    assert again.offset == first.offset
    assert (batch_again.offset, batch_again.count) == (batch.offset, 3)
    assert fresh.offset == 4


def test_restart_keeps_streams_and_records(make_node, stream_name):
    node = make_node()
    with httpx.Client(base_url=node.api_url, timeout=30) as api:
        create_stream(api, stream_name, partitions=2)
        api.post(
            f"/v1/streams/{stream_name}/partitions/1/records",
            json={"records": [{"value": "kept"}]},
            params={"encoding": "utf-8"},
        )
    node.stop()
    node.start()
    with httpx.Client(base_url=node.api_url, timeout=30) as api:
        wait_for(lambda: api.get(f"/v1/streams/{stream_name}").status_code == 200, 10)
        body = api.get(
            f"/v1/streams/{stream_name}/partitions/1/records", params={"encoding": "utf-8"}
        ).json()
    assert [r["value"] for r in body["records"]] == ["kept"]
    assert os.path.isdir(node.config.data_dir)
