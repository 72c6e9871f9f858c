"""Subscribe start and stop positions on a real node, through the client, REST and the CLI.

Starts: earliest, latest (the last committed record, inclusive), new-only (after it), an
offset, a time. Stops: an offset (inclusive), latest (the HW when the subscription starts),
a time (before the first record stamped after it). Reaching the stop ends the subscription.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest

from spark_log import SyncClient
from spark_log.client import Client
from spark_log.errors import InvalidRequestError
from spark_log.log import Record
from tests.integration.conftest import create_stream, fetch, node_client
from tests.support.waiting import wait_for, wait_for_async

LIFTLOG = str(Path(sys.executable).parent / "liftlog")
CLI_TIMEOUT_S = 60
LONG_POLL_MS = 10_000
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
ARROW = "application/vnd.apache.arrow.stream"


def _at_ms(ms: int) -> dt.datetime:
    return EPOCH + dt.timedelta(milliseconds=ms)


def _fetch_waiters(api: httpx.Client) -> float:
    """Fetches long-polling on the node now: a subscription that waits at its start."""
    text = api.get("/metrics").text
    return sum(float(v) for v in re.findall(r"^liftlog_fetch_waiters (\S+)$", text, re.M))


async def _old_and_new(client: Client, stream: str) -> int:
    """Five ``old-i`` then five ``new-i`` records; returns the last millisecond an old one
    can carry (each was stamped by the time its ack came back; the new ones are published
    only once the clock is past it, so all are stamped later)."""
    for i in range(5):
        await client.publish(stream, f"old-{i}")
    acked_ms = int(time.time() * 1000)
    wait_for(lambda: int(time.time() * 1000) > acked_ms, 1, message="the next millisecond")
    for i in range(5):
        await client.publish(stream, f"new-{i}")
    return acked_ms


async def _read(client: Client, stream: str, start: Any = "earliest", **kw: Any) -> list[Record]:
    kw.setdefault("poll_wait_ms", 200)
    return [r async for r in client.subscribe(stream, 0, start, **kw)]


async def _first_after_subscribing(client: Client, api: httpx.Client, stream: str, start: str):
    """The first record a subscription from ``start`` yields when one record is published
    once it waits at its start (a long-polling fetch shows it is there)."""
    task = asyncio.create_task(
        _read(client, stream, start, max_records=1, poll_wait_ms=LONG_POLL_MS)
    )
    await wait_for_async(
        lambda: _fetch_waiters(api) > 0 or task.done(), 15, message="the subscription waits"
    )
    await client.publish(stream, "live")
    return await asyncio.wait_for(task, 15)


# ------------------------------------------------------------------------- client


async def test_client_starts_earliest_latest_offset_and_time(node, stream_name):
    async with Client(node.api_url) as client:
        await client.create_stream(stream_name, f"{stream_name}.in")
        acked_ms = await _old_and_new(client, stream_name)

        earliest = await _read(client, stream_name, "earliest", stop="latest")
        assert [r.offset for r in earliest] == list(range(10))
        latest = await _read(client, stream_name, "latest", stop="latest")
        assert [(r.offset, r.value) for r in latest] == [(9, b"new-4")]  # inclusive
        assert await _read(client, stream_name, "new-only", stop="latest") == []
        from_offset = await _read(client, stream_name, 7, stop="latest")
        assert [r.value for r in from_offset] == [b"new-2", b"new-3", b"new-4"]
        by_time = await _read(client, stream_name, _at_ms(acked_ms + 1), stop="latest")
        assert [r.value for r in by_time] == [f"new-{i}".encode() for i in range(5)]
        assert await client.start_offset(stream_name, 0, "latest") == 9
        assert await client.start_offset(stream_name, 0, "new-only") == 10
        assert await client.start_offset(stream_name, 0, _at_ms(acked_ms + 10**9)) == 10


async def test_latest_on_an_empty_partition_behaves_like_new_only(node, stream_name):
    async with Client(node.api_url) as client:
        await client.create_stream(stream_name, f"{stream_name}.in")
        assert await client.start_offset(stream_name, 0, "latest") == 0
        assert await client.start_offset(stream_name, 0, "new-only") == 0
        with node_client(node.api_url) as api:
            first = await _first_after_subscribing(client, api, stream_name, "latest")
        assert [(r.offset, r.value) for r in first] == [(0, b"live")]


async def test_new_only_sees_only_records_published_after_subscribing(node, stream_name):
    async with Client(node.api_url) as client:
        await client.create_stream(stream_name, f"{stream_name}.in")
        for i in range(3):
            await client.publish(stream_name, f"old-{i}")
        with node_client(node.api_url) as api:
            first = await _first_after_subscribing(client, api, stream_name, "new-only")
        assert [(r.offset, r.value) for r in first] == [(3, b"live")]


async def test_stop_latest_ends_at_what_was_committed_while_more_is_published(node, stream_name):
    async with Client(node.api_url) as client:
        await client.create_stream(stream_name, f"{stream_name}.in")
        await client.publish_batch(stream_name, [f"v{i}" for i in range(5)])
        seen = []
        records = client.subscribe(stream_name, stop="latest", fetch_max_records=1)
        async for record in records:  # every record read commits another one
            seen.append(record.offset)
            await client.publish(stream_name, f"during-{record.offset}")
        assert seen == [0, 1, 2, 3, 4]
        assert (await client.describe_stream(stream_name)).partition(0).high_watermark == 10
        # the same from "latest": the one record committed at subscribe time
        assert [r.offset for r in await _read(client, stream_name, "latest", stop="latest")] == [9]


async def test_stop_offset_is_inclusive_and_waited_for(node, stream_name):
    async with Client(node.api_url) as client:
        await client.create_stream(stream_name, f"{stream_name}.in")
        await client.publish_batch(stream_name, ["a", "b", "c"])
        assert [r.offset for r in await _read(client, stream_name, 0, stop=0)] == [0]
        assert [r.offset for r in await _read(client, stream_name, 1, stop=2)] == [1, 2]
        with node_client(node.api_url) as api:
            task = asyncio.create_task(_read(client, stream_name, 1, stop=5))
            for value in ("d", "e", "f", "g"):  # offsets 3..6: 6 is past the stop
                await wait_for_async(
                    lambda: _fetch_waiters(api) > 0 or task.done(),
                    15,
                    message="the subscription waits",
                )
                await client.publish(stream_name, value)
            records = await asyncio.wait_for(task, 15)
        assert [(r.offset, r.value) for r in records] == [
            (1, b"b"),
            (2, b"c"),
            (3, b"d"),
            (4, b"e"),
            (5, b"f"),
        ]


async def test_stop_at_a_time_ends_before_the_first_later_record(node, stream_name):
    async with Client(node.api_url) as client:
        await client.create_stream(stream_name, f"{stream_name}.in")
        acked_ms = await _old_and_new(client, stream_name)
        old = await _read(client, stream_name, "earliest", stop=_at_ms(acked_ms))
        assert [r.value for r in old] == [f"old-{i}".encode() for i in range(5)]
        first_ms = old[0].timestamp
        assert await _read(client, stream_name, stop=_at_ms(first_ms - 1)) == []
        # a time start and a time stop together: a window of time
        middle_ms = old[2].timestamp
        window = await _read(client, stream_name, _at_ms(middle_ms), stop=_at_ms(acked_ms))
        expected = [r.offset for r in old if r.timestamp >= middle_ms]
        assert [r.offset for r in window] == expected and expected[-1] == 4


async def test_bad_positions_raise_invalid_request(node, stream_name):
    async with Client(node.api_url) as client:
        await client.create_stream(stream_name, f"{stream_name}.in")
        for kwargs in (
            {"start": "newest"},
            {"start": -1},
            {"start": True},
            {"stop": "earliest"},
            {"stop": -3},
            {"start": 5, "stop": 2},
        ):
            with pytest.raises(InvalidRequestError):
                [r async for r in client.subscribe(stream_name, **kwargs)]
        with pytest.raises(InvalidRequestError, match="new-only"):
            await client.start_offset(stream_name, 0, "last")  # type: ignore[arg-type]


def test_sync_client_takes_the_same_positions(node, stream_name):
    with SyncClient(node.api_url) as client:
        client.create_stream(stream_name, f"{stream_name}.in")
        client.publish_batch(stream_name, ["a", "b", "c", "d"])
        assert [r.offset for r in client.subscribe(stream_name, start="latest", stop="latest")] == [
            3
        ]
        assert [r.value for r in client.subscribe(stream_name, start=1, stop=2)] == [b"b", b"c"]
        with pytest.raises(InvalidRequestError, match="stop"):
            client.subscribe(stream_name, stop="new-only")  # type: ignore[arg-type]


# ------------------------------------------------------------------------- REST


def _publish_rest(api: httpx.Client, stream: str, values: list[str]) -> None:
    resp = api.post(
        f"/v1/streams/{stream}/partitions/0/records",
        json={"records": [{"value": v} for v in values]},
        params={"encoding": "utf-8"},
    )
    assert resp.status_code == 200, resp.text


def test_rest_named_starts(api, stream_name):
    create_stream(api, stream_name)
    empty_latest = fetch(api, stream_name, start="latest")
    assert (empty_latest["records"], empty_latest["next_offset"]) == ([], 0)
    _publish_rest(api, stream_name, ["a", "b", "c"])
    earliest = fetch(api, stream_name, start="earliest")
    assert [r["value"] for r in earliest["records"]] == ["a", "b", "c"]
    latest = fetch(api, stream_name, start="latest")
    assert [(r["offset"], r["value"]) for r in latest["records"]] == [(2, "c")]
    new_only = fetch(api, stream_name, start="new-only")
    assert (new_only["records"], new_only["next_offset"], new_only["high_watermark"]) == (
        [],
        3,
        3,
    )
    assert new_only["end_reached"] is False


def test_rest_new_only_long_polls_for_the_next_record(api, stream_name):
    create_stream(api, stream_name)
    _publish_rest(api, stream_name, ["old"])

    def publish_later() -> None:
        wait_for(lambda: _fetch_waiters(api) > 0, 10, message="a fetch is long-polling")
        _publish_rest(api, stream_name, ["new"])

    thread = threading.Thread(target=publish_later)
    thread.start()
    body = fetch(api, stream_name, start="new-only", wait_ms=LONG_POLL_MS)
    thread.join()
    assert [(r["offset"], r["value"]) for r in body["records"]] == [(1, "new")]


def test_rest_stops_say_when_they_are_reached(api, stream_name):
    create_stream(api, stream_name)
    _publish_rest(api, stream_name, ["a", "b", "c"])
    middle_ms = int(time.time() * 1000)
    wait_for(lambda: int(time.time() * 1000) > middle_ms, 1, message="the next millisecond")
    _publish_rest(api, stream_name, ["d", "e"])

    by_offset = fetch(api, stream_name, offset=0, stop_offset=1)
    assert [r["value"] for r in by_offset["records"]] == ["a", "b"]  # inclusive
    assert (by_offset["next_offset"], by_offset["end_reached"]) == (2, True)
    short_of_it = fetch(api, stream_name, offset=0, stop_offset=4, max_records=2)
    assert short_of_it["end_reached"] is False
    past = fetch(api, stream_name, offset=2, stop_offset=1, wait_ms=LONG_POLL_MS)
    assert (past["records"], past["end_reached"]) == ([], True)  # at once, no long-poll

    by_time = fetch(api, stream_name, start="earliest", stop_timestamp=middle_ms)
    assert [r["value"] for r in by_time["records"]] == ["a", "b", "c"]
    assert (by_time["next_offset"], by_time["end_reached"]) == (3, True)
    ahead = fetch(api, stream_name, offset=3, stop_timestamp=middle_ms + 10**9)
    assert ([r["value"] for r in ahead["records"]], ahead["end_reached"]) == (["d", "e"], False)

    arrow = api.get(
        f"/v1/streams/{stream_name}/partitions/0/records",
        params={"start": "latest", "stop_offset": 4},
        headers={"accept": ARROW},
    )
    assert pa.ipc.open_stream(arrow.content).read_all().column("offset").to_pylist() == [4]
    assert arrow.headers["liftlog-end-reached"] == "true"
    assert arrow.headers["liftlog-next-offset"] == "5"
    cut = api.get(
        f"/v1/streams/{stream_name}/partitions/0/records",
        params={"offset": 1, "stop_timestamp": middle_ms},
        headers={"accept": ARROW},
    )
    assert pa.ipc.open_stream(cut.content).read_all().column("offset").to_pylist() == [1, 2]
    assert cut.headers["liftlog-end-reached"] == "true"


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"start": "newest"}, "start"),
        ({"start": "latest", "offset": 0}, "offset, start"),
        ({"start": "earliest", "timestamp": 1}, "timestamp, start"),
        ({"stop_offset": -1}, "stop_offset"),
        ({"stop_timestamp": "soon"}, "stop_timestamp"),
        ({"stop": "latest"}, "stop"),
    ],
)
def test_rest_bad_positions_are_422_naming_them(api, stream_name, params, named):
    create_stream(api, stream_name)
    resp = api.get(f"/v1/streams/{stream_name}/partitions/0/records", params=params)
    assert resp.status_code == 422, resp.text
    assert resp.json()["error"]["code"] == "invalid_request"
    assert named in resp.json()["error"]["message"]


# ------------------------------------------------------------------------- CLI


def _tail(server: str, stream: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LIFTLOG, "tail", stream, "--json", *args, "--server", server],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )


def _tail_in_background(server: str, stream: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [LIFTLOG, "tail", stream, "--json", *args, "--server", server],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen[str]) -> tuple[int, list[dict[str, Any]], str]:
    try:
        out, err = proc.communicate(timeout=CLI_TIMEOUT_S)
    finally:
        proc.kill()
        proc.wait()
    return proc.returncode, [json.loads(line) for line in out.splitlines()], err


def _offsets(result: subprocess.CompletedProcess[str]) -> list[int]:
    assert result.returncode == 0, result.stderr
    return [json.loads(line)["offset"] for line in result.stdout.splitlines()]


async def test_cli_tail_from_and_until(node, stream_name):
    server = node.api_url
    async with Client(server) as client:
        await client.create_stream(stream_name, f"{stream_name}.in")
        acked_ms = await _old_and_new(client, stream_name)
        boundary = _at_ms(acked_ms).isoformat()
        after = _at_ms(acked_ms + 1).isoformat()

        assert _offsets(_tail(server, stream_name, "--from", "latest")) == [9]
        assert _offsets(_tail(server, stream_name, "--from", "new-only")) == []
        assert _offsets(_tail(server, stream_name, "--from", "earliest")) == list(range(10))
        assert _offsets(_tail(server, stream_name, "--from", after)) == list(range(5, 10))
        assert _offsets(_tail(server, stream_name, "--until", "3")) == [0, 1, 2, 3]
        assert _offsets(_tail(server, stream_name, "--from", "2", "--until", "2")) == [2]
        assert _offsets(_tail(server, stream_name, "--until", boundary)) == list(range(5))
        assert _offsets(_tail(server, stream_name, "--until", "latest", "-f")) == list(range(10))

        # --until ahead waits for the records up to it, then exits 0
        waiting = _tail_in_background(server, stream_name, "--from", "8", "--until", "11")
        with node_client(server) as api:
            for i in range(3):  # offsets 10..12: 12 is past the stop
                await wait_for_async(
                    lambda: _fetch_waiters(api) > 0 or waiting.poll() is not None,
                    30,
                    message="tail waits for the stop",
                )
                await client.publish(stream_name, f"late-{i}")
        code, lines, err = _finish(waiting)
        assert code == 0, err
        assert [(r["offset"], r["value"]) for r in lines] == [
            (8, "new-3"),
            (9, "new-4"),
            (10, "late-0"),
            (11, "late-1"),
        ]


async def test_cli_tail_new_only_follows_only_new_records(node, stream_name):
    server = node.api_url
    async with Client(server) as client:
        await client.create_stream(stream_name, f"{stream_name}.in")
        await client.publish(stream_name, "old")
        follow = _tail_in_background(server, stream_name, "--from", "new-only", "-f", "--max", "1")
        with node_client(server) as api:
            await wait_for_async(
                lambda: _fetch_waiters(api) > 0, 30, message="tail -f waits for records"
            )
        await client.publish(stream_name, "new")
        code, lines, err = _finish(follow)
    assert code == 0, err
    assert [(r["offset"], r["value"]) for r in lines] == [(1, "new")]


def test_cli_tail_refuses_bad_positions(node, stream_name):
    for args, message in (
        (("--from", "newest"), "--from wants"),
        (("--until", "earliest"), "--until wants"),
        (("--from", "5", "--until", "2"), "before start offset"),
    ):
        result = _tail(node.api_url, stream_name, *args)
        assert result.returncode == 1
        assert message in result.stderr
