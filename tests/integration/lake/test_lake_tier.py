"""The lake as a read tier: once retention has deleted exported segments, every consumer path
(REST JSON and Arrow, ``Client.fetch``, ``Client.subscribe`` and ``Client.consume``,
``liftlog tail``) reads from
offset 0 through the lake and on into the local log, every offset exactly once; ``earliest``
is the lake's first offset, a time search below the log start finds lake records, and
describe shows both starts. On a local and an S3 lake, and for an encrypted stream."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from ingest.lake.tier import LAKE_VIEW_TTL_S
from spark_log.client import Client
from spark_log.config import LakeConfig, LogConfig
from spark_log.wire import ARROW_STREAM_MEDIA_TYPE
from tests.integration.conftest import create_stream, node_client
from tests.support.encryption_cluster import encrypted_node_overrides, new_master_key
from tests.support.lake_stores import LakeUnderTest
from tests.support.waiting import wait_for

COUNT = 3000
BATCH = 500
RETAINED = 400
PAGE = 700
"""Fetch size: pages that start in the lake and reach past the log start."""
NEVER_S = 3600.0
HUGE_BYTES = 1 << 40
SMALL_LOG = LogConfig(segment_bytes=16 * 1024, retention_check_interval_ms=100)
LIFTLOG = str(Path(sys.executable).parent / "liftlog")
CLI_TIMEOUT_S = 60


def value(offset: int) -> str:
    return f"v{offset}-" + "x" * 60


def records_url(stream: str) -> str:
    return f"/v1/streams/{stream}/partitions/0/records"


def build_history(api: httpx.Client, stream: str, **spec: Any) -> int:
    """COUNT records, all exported, retention run until only the last segment is left locally;
    the log start."""
    create_stream(api, stream, retention_messages=RETAINED, **spec)
    for first in range(0, COUNT, BATCH):
        body = {"records": [{"value": value(o)} for o in range(first, first + BATCH)]}
        published = api.post(records_url(stream), json=body, params={"encoding": "utf-8"})
        assert published.status_code == 200, published.text
    flushed = api.post(f"/v1/streams/{stream}/flush")
    assert flushed.status_code == 200, flushed.text
    assert flushed.json()["partitions"][0]["lake_offset"] == COUNT
    # each batch fills a segment of its own (SMALL_LOG), so retention deletes all segments
    # but the last: the log start ends at COUNT - BATCH
    return wait_for(
        lambda: (start := describe(api, stream)["log_start_offset"]) >= COUNT - BATCH and start,
        20,
        message="retention deleted exported segments",
    )


def describe(api: httpx.Client, stream: str) -> dict[str, Any]:
    described = api.get(f"/v1/streams/{stream}")
    assert described.status_code == 200, described.text
    partition: dict[str, Any] = described.json()["partitions"][0]
    return partition


def read_json(api: httpx.Client, stream: str) -> list[tuple[int, str]]:
    """Every record from offset 0 by ``next_offset``, over JSON pages."""
    got: list[tuple[int, str]] = []
    offset = 0
    while offset < COUNT:
        page = api.get(
            records_url(stream),
            params={"offset": offset, "max_records": PAGE, "encoding": "utf-8"},
        )
        assert page.status_code == 200, page.text
        body = page.json()
        got += [(r["offset"], r["value"]) for r in body["records"]]
        assert body["next_offset"] > offset
        offset = body["next_offset"]
    return got


def read_arrow(api: httpx.Client, stream: str) -> list[tuple[int, str]]:
    """Every record from offset 0 by the ``Liftlog-Next-Offset`` header, over Arrow pages."""
    got: list[tuple[int, str]] = []
    offset = 0
    while offset < COUNT:
        page = api.get(
            records_url(stream),
            params={"offset": offset, "max_records": PAGE},
            headers={"Accept": ARROW_STREAM_MEDIA_TYPE},
        )
        assert page.status_code == 200, page.text
        table = pa.ipc.open_stream(pa.py_buffer(page.content)).read_all()
        values = [v.decode() for v in table.column("value").to_pylist()]
        got += list(zip(table.column("offset").to_pylist(), values, strict=True))
        assert int(page.headers["liftlog-next-offset"]) > offset
        offset = int(page.headers["liftlog-next-offset"])
    return got


async def read_client(url: str, stream: str) -> tuple[list[tuple[int, str]], ...]:
    """Every record through ``Client.fetch`` pages, and through ``Client.subscribe``."""
    async with Client(url) as client:
        fetched: list[tuple[int, str]] = []
        offset = 0
        while offset < COUNT:
            page = await client.fetch(stream, 0, offset, max_records=PAGE)
            fetched += [(r.offset, r.value.decode()) for r in page.records]
            offset = page.next_offset
        subscribed = [
            (r.offset, r.value.decode())
            async for r in client.subscribe(
                stream, 0, "earliest", stop=COUNT - 1, fetch_max_records=PAGE
            )
        ]
        first = await client.start_offset(stream, 0, "earliest")
        consumed = await read_group(client, stream)
    return fetched, subscribed, consumed, [(first, "")]


async def read_group(client: Client, stream: str) -> list[tuple[int, str]]:
    """Every record through a new consumer group's one member (it starts at ``earliest``)."""
    consumed: list[tuple[int, str]] = []
    consumer = client.consume(f"{stream}-g", [stream], auto_offset_reset="earliest")
    async with consumer:
        async for record in consumer:
            consumed.append((record.offset, record.value.decode()))
            if record.offset == COUNT - 1:
                break
    return consumed


def read_tail(url: str, stream: str) -> list[tuple[int, str]]:
    """``liftlog tail`` from earliest (its default) to the end, as JSON lines."""
    tail = subprocess.run(
        [LIFTLOG, "tail", stream, "--json", "--server", url],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )
    assert tail.returncode == 0, tail.stderr
    lines = [json.loads(line) for line in tail.stdout.splitlines()]
    return [(line["offset"], line["value"]) for line in lines]


async def test_every_path_reads_every_offset_once_across_the_lake_and_the_log(
    make_node, stream_name, test_lake: LakeUnderTest
):
    node = make_node(
        log=SMALL_LOG,
        lake=test_lake.config(export_interval_s=NEVER_S, export_min_bytes=HUGE_BYTES),
    )
    want = [(o, value(o)) for o in range(COUNT)]
    with node_client(node.api_url, timeout=60) as api:
        log_start = build_history(api, stream_name)
        assert 0 < log_start < COUNT
        assert log_start % PAGE != 0  # a page from the lake stops at the log start
        assert read_json(api, stream_name) == want
        assert read_arrow(api, stream_name) == want

        earliest = api.get(records_url(stream_name), params={"start": "earliest"}).json()
        assert earliest["records"][0]["offset"] == 0
        unpositioned = api.get(records_url(stream_name), params={"max_records": 1}).json()
        assert unpositioned["records"][0]["offset"] == 0
        first_ms = earliest["records"][0]["timestamp"]
        by_time = api.get(records_url(stream_name), params={"timestamp": first_ms}).json()
        assert by_time["records"][0]["offset"] == 0  # found in the lake, below the log start

        partition = describe(api, stream_name)
        assert (partition["lake_start_offset"], partition["log_start_offset"]) == (0, log_start)

    fetched, subscribed, consumed, first = await read_client(node.api_url, stream_name)
    assert fetched == want and subscribed == want and consumed == want and first == [(0, "")]
    assert await asyncio.to_thread(read_tail, node.api_url, stream_name) == want

    described = await asyncio.to_thread(
        subprocess.run,
        [LIFTLOG, "stream", "describe", stream_name, "--server", node.api_url],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )
    lines = described.stdout.splitlines()
    header = next(line for line in lines if line.startswith("PARTITION"))
    assert header.index("LOG START") < header.index("LAKE START")
    row = next(line.split() for line in lines if line.startswith("0 "))
    assert row[8:11] == [str(log_start), "0", str(COUNT)]  # LOG START, LAKE START, LAKE


async def test_an_encrypted_streams_lake_is_read_decrypted_on_the_node(
    make_node, stream_name, tmp_path
):
    node = make_node(
        log=SMALL_LOG,
        lake=LakeConfig(
            uri=str(tmp_path / "lake"), export_interval_s=NEVER_S, export_min_bytes=HUGE_BYTES
        ),
        **encrypted_node_overrides(new_master_key()),
    )
    want = [(o, value(o)) for o in range(COUNT)]
    with node_client(node.api_url, timeout=60) as api:
        assert build_history(api, stream_name, encryption=True) > 0
        assert read_json(api, stream_name) == want
        assert read_arrow(api, stream_name) == want
    fetched, subscribed, consumed, _first = await read_client(node.api_url, stream_name)
    assert fetched == want and subscribed == want and consumed == want


def compact_below(uri: str, log_start: int) -> set[int]:
    """What a key compaction and a vacuum do to the table: the rows rewritten into new files
    with offsets missing (here all but every 7th below the log start), the old files deleted.
    The kept offsets."""
    table = DeltaTable(uri)
    old = [Path(u.removeprefix("file://")) for u in table.file_uris()]
    rows = table.to_pyarrow_table()
    keep = [o >= log_start or o % 7 == 0 for o in rows.column("offset").to_pylist()]
    kept = rows.filter(pa.array(keep))
    write_deltalake(uri, kept, mode="overwrite")
    for path in old:
        path.unlink()
    return set(kept.column("offset").to_pylist())


async def test_a_compacted_lake_with_gaps_is_read_by_next_offset(make_node, stream_name, tmp_path):
    node = make_node(
        log=SMALL_LOG,
        lake=LakeConfig(
            uri=str(tmp_path / "lake"), export_interval_s=NEVER_S, export_min_bytes=HUGE_BYTES
        ),
    )
    with node_client(node.api_url, timeout=60) as api:
        log_start = build_history(api, stream_name)
        assert read_json(api, stream_name)[0][0] == 0  # the node caches the table's snapshot
        uri = api.get(f"/v1/streams/{stream_name}").json()["lake"]["uri"]
        kept = compact_below(uri, log_start)

        def gap_page() -> dict[str, Any]:
            page = api.get(records_url(stream_name), params={"offset": 1, "max_records": 6})
            return page.json()  # type: ignore[no-any-return]

        # the node reads the new snapshot once its cached one expires (LAKE_VIEW_TTL_S)
        gap = wait_for(lambda: (g := gap_page())["records"] == [] and g, LAKE_VIEW_TTL_S * 3)
        assert gap["next_offset"] == 7  # empty, and not the end
        arrow_gap = api.get(
            records_url(stream_name),
            params={"offset": 8, "max_records": 6},
            headers={"Accept": ARROW_STREAM_MEDIA_TYPE},
        )
        assert arrow_gap.headers["liftlog-next-offset"] == "14"
    want = [(o, value(o)) for o in sorted(kept)]
    async with Client(node.api_url) as client:
        subscribed = [
            (r.offset, r.value.decode())
            async for r in client.subscribe(stream_name, 0, stop=COUNT - 1, fetch_max_records=5)
        ]
    assert subscribed == want
