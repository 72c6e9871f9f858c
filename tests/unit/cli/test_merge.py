"""Merging partitions for ``liftlog tail``: by timestamp, then partition, then offset, one
page per partition at a time."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from liftlog.cli import merge
from liftlog.cli.merge import merged_records


class PagedPartitions:
    """Committed records per partition, served a page at a time like the REST fetch."""

    def __init__(self, timestamps: dict[int, list[int]]) -> None:
        self.timestamps = timestamps
        self.fetches = 0

    async def fetch(
        self, stream: str, partition: int, offset: int, *, max_records: int
    ) -> SimpleNamespace:
        self.fetches += 1
        stamps = self.timestamps[partition][offset : offset + max_records]
        records = [SimpleNamespace(offset=offset + i, timestamp=t) for i, t in enumerate(stamps)]
        return SimpleNamespace(records=records)


def test_records_merge_by_time_then_partition_then_offset(monkeypatch):
    monkeypatch.setattr(merge, "TAIL_PAGE_RECORDS", 2)
    client = PagedPartitions({0: [10, 30, 30, 50], 1: [20, 30, 40]})
    offsets = {0: 0, 1: 0}

    async def collect() -> list[tuple[int, int]]:
        return [(p, r.offset) async for p, r in merged_records(client, "s", offsets)]

    merged = asyncio.run(collect())

    assert merged == [(0, 0), (1, 0), (0, 1), (0, 2), (1, 1), (1, 2), (0, 3)]
    assert offsets == {0: 4, 1: 3}  # advanced past everything yielded


def test_a_start_offset_per_partition_is_honoured():
    client = PagedPartitions({0: [10, 30], 1: [20, 40]})

    async def collect() -> list[tuple[int, int]]:
        return [(p, r.offset) async for p, r in merged_records(client, "s", {0: 1, 1: 2})]

    assert asyncio.run(collect()) == [(0, 1)]
