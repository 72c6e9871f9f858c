"""Known record sets for the data source tests, published and flushed through the client.

Every record's value names its place (``b"<p>:<offset>"``), so a read can be checked against
the offsets alone: any gap, duplicate or misplaced row shows.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from liftlog.embedded.node import NodeProcess
from spark_log.api_models import FlushResult, StreamDescription
from spark_log.client import Client
from spark_log.config import LakeConfig
from tests.integration.conftest import _node_factory
from tests.support.stacks import SecureMaterial

MANUAL_EXPORT_INTERVAL_S = 3600.0
"""Long enough that only an explicit flush exports: the lake/tail seam stays where a test put
it."""


@pytest.fixture(scope="module")
def lake_node(
    zookeeper: Any,
    nats_server: Any,
    tmp_path_factory: pytest.TempPathFactory,
    secure_material: SecureMaterial | None,
) -> Iterator[NodeProcess]:
    """One node (shared by a module) whose lake exports only on flush."""
    root = tmp_path_factory.mktemp("lake-node")
    factory = _node_factory(
        zookeeper, nats_server, root, f"/liftlog-{uuid.uuid4().hex[:12]}", secure_material
    )
    make = next(factory)
    yield make(1, lake=LakeConfig(export_interval_s=MANUAL_EXPORT_INTERVAL_S))
    next(factory, None)


def value_of(partition: int, offset: int) -> bytes:
    return b"%d:%d" % (partition, offset)


def key_of(offset: int) -> bytes | None:
    """Every third record has no key; the others cycle through ten keys."""
    return None if offset % 3 == 0 else b"key-%d" % (offset % 10)


def headers_of(offset: int) -> dict[str, str] | None:
    return {"n": str(offset)} if offset % 2 else None


def create(api_url: str, stream: str, partitions: int, **spec: Any) -> None:
    async def run() -> None:
        async with Client(api_url) as client:
            await client.create_stream(stream, f"{stream}.in", partitions=partitions, **spec)

    asyncio.run(run())


def publish(api_url: str, stream: str, counts: dict[int, int], batch: int = 1000) -> None:
    """Append ``counts[p]`` known records to each partition p (producer batches, acks=all)."""

    async def run() -> None:
        async with Client(api_url) as client:
            for partition, count in counts.items():
                described = await client.describe_stream(stream)
                first = described.partition(partition).high_watermark or 0
                for lo in range(first, first + count, batch):
                    offsets = range(lo, min(lo + batch, first + count))
                    await client.publish_batch(
                        stream,
                        [value_of(partition, o) for o in offsets],
                        keys=[key_of(o) for o in offsets],
                        headers=[headers_of(o) for o in offsets],
                        partition=partition,
                    )

    asyncio.run(run())


def flush(api_url: str, stream: str) -> dict[int, int | None]:
    """Export everything committed; each partition's lake offset afterwards."""

    async def run() -> FlushResult:
        async with Client(api_url) as client:
            return await client.flush_stream(stream)

    body = asyncio.run(run())
    return {p.partition: p.lake_offset for p in body.partitions}


def describe(api_url: str, stream: str) -> StreamDescription:
    async def run() -> StreamDescription:
        async with Client(api_url) as client:
            return await client.describe_stream(stream)

    return asyncio.run(run())


def lake_uri(api_url: str, stream: str) -> str:
    lake = describe(api_url, stream).lake
    assert lake is not None, f"stream {stream} has no lake"
    return lake.uri


def rows_by_place(rows: list[Any]) -> dict[tuple[int, int], Any]:
    """Rows keyed by (partition, offset); fails on a duplicate place."""
    placed: dict[tuple[int, int], Any] = {}
    for row in rows:
        place = (row["partition"], row["offset"])
        assert place not in placed, f"duplicate row at {place}"
        placed[place] = row
    return placed


def expected_places(ranges: dict[int, tuple[int, int]]) -> set[tuple[int, int]]:
    return {(p, o) for p, (lo, hi) in ranges.items() for o in range(lo, hi)}
