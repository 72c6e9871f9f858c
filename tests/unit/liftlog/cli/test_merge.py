"""Merging partitions for ``liftlog tail``: by timestamp, then partition, then offset, one
page per partition at a time, through ``Client.subscribe``; catch-up ends at each
partition's high watermark taken at the start, even while writes continue."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from liftlog.cli import merge
from liftlog.cli.merge import follow_partitions, merged_records
from spark_log.client import Client, Fetched
from spark_log.errors import NotLeaderError
from tests.support.waiting import one_loop_turn


class PagedPartitions(Client):
    """The real client's subscribe over committed records served a page at a time like the
    REST fetch (no node: ``fetch`` is the only thing replaced). With ``growing`` every fetch
    commits one more record to every partition, as a busy stream would."""

    def __init__(self, timestamps: dict[int, list[int]], growing: bool = False) -> None:
        super().__init__("http://127.0.0.1:1")
        self.timestamps = timestamps
        self.growing = growing
        self.fetches = 0
        self.refusals = 0
        self.hw_answers: dict[int, int] = {}

    async def fetch(  # type: ignore[override]
        self,
        stream: str,
        partition: int = 0,
        offset: int | None = None,
        *,
        timestamp_ms: int | None = None,
        start: str | None = None,
        stop_timestamp_ms: int | None = None,
        max_records: int = 1000,
        wait_ms: int = 0,
    ) -> Fetched:
        self.fetches += 1
        await one_loop_turn()  # a real fetch suspends; an empty long-poll must not spin
        if self.refusals:
            self.refusals -= 1
            raise NotLeaderError("a leader change")
        stamps = self.timestamps[partition]
        first = 0 if offset is None else offset
        if start == "new-only":  # reads nothing: it starts at the HW
            first = len(stamps)
        page = stamps[first : first + max_records]
        records = [SimpleNamespace(offset=first + i, timestamp=t) for i, t in enumerate(page)]
        fetched = Fetched(records, len(stamps), first + len(records))  # type: ignore[arg-type]
        if start == "new-only":
            self.hw_answers.setdefault(partition, len(stamps))
        if self.growing:  # committed after this answer
            for each in self.timestamps.values():
                each.append(each[-1] + 1 if each else 0)
        return fetched


def _collect(client: PagedPartitions, offsets: dict[int, int]) -> list[tuple[int, int]]:
    async def collect() -> list[tuple[int, int]]:
        return [(p, r.offset) async for p, r in merged_records(client, "s", offsets)]

    return asyncio.run(collect())


def test_records_merge_by_time_then_partition_then_offset(monkeypatch):
    monkeypatch.setattr(merge, "TAIL_PAGE_RECORDS", 2)
    client = PagedPartitions({0: [10, 30, 30, 50], 1: [20, 30, 40]})
    offsets = {0: 0, 1: 0}
    merged = _collect(client, offsets)
    assert merged == [(0, 0), (1, 0), (0, 1), (0, 2), (1, 1), (1, 2), (0, 3)]
    assert offsets == {0: 4, 1: 3}  # advanced past everything yielded


def test_a_start_offset_per_partition_is_honoured():
    client = PagedPartitions({0: [10, 30], 1: [20, 40]})
    assert _collect(client, {0: 1, 1: 2}) == [(0, 1)]


def test_catch_up_ends_at_the_high_watermark_taken_at_the_start_while_writes_continue(
    monkeypatch,
):
    monkeypatch.setattr(merge, "TAIL_PAGE_RECORDS", 2)
    client = PagedPartitions({0: [10, 30, 50], 1: [20, 40]}, growing=True)
    offsets = {0: 0, 1: 0}
    merged = _collect(client, offsets)  # before the fix this never ended
    assert client.hw_answers[0] == 3  # partition 0's HW, asked first
    assert offsets == client.hw_answers  # each stopped at its own HW from the start
    expected = [(p, o) for p, hw in client.hw_answers.items() for o in range(hw)]
    assert sorted(merged) == expected
    assert all(len(stamps) > offsets[p] for p, stamps in client.timestamps.items())


def test_following_retries_a_leader_change_through_subscribe(monkeypatch):
    monkeypatch.setattr(merge, "FOLLOW_WAIT_MS", 1)  # subscribe's pause before asking again
    client = PagedPartitions({0: [10, 20], 1: [15]})
    client.refusals = 2

    async def collect() -> list[tuple[int, int]]:
        return [(p, r.offset) async for p, r in follow_partitions(client, "s", {0: 0, 1: 0}, 3)]

    assert sorted(asyncio.run(collect())) == [(0, 0), (0, 1), (1, 0)]
