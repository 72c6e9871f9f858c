"""Reading several partitions as one stream of records.

Catching up: records up to each partition's current end are merged by (timestamp, partition,
offset), holding at most one fetched page per partition in memory. Following: every partition
long-polls at once and records are yielded as they arrive (time order across partitions
cannot be known before the later records exist).
"""

from __future__ import annotations

import asyncio
import heapq
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from spark_log.errors import NotLeaderError, UnavailableError

TAIL_PAGE_RECORDS = 1000
FOLLOW_WAIT_MS = 1000
FOLLOW_QUEUE_RECORDS = 10_000

Item = tuple[int, Any]  # (partition, record)


async def merged_records(client: Any, stream: str, offsets: dict[int, int]) -> AsyncIterator[Item]:
    """Committed records from ``offsets`` (partition → first offset) until each partition has
    none left, merged by timestamp; ``offsets`` is advanced past every record yielded."""
    pages: dict[int, deque[Any]] = {}
    for partition in offsets:
        page = await _page(client, stream, partition, offsets[partition])
        if page:
            pages[partition] = page
    heap = [_entry(p, page[0]) for p, page in pages.items()]
    heapq.heapify(heap)
    while heap:
        _ts, partition, _offset = heapq.heappop(heap)
        page = pages[partition]
        record = page.popleft()
        offsets[partition] = record.offset + 1
        yield partition, record
        if not page:
            page = await _page(client, stream, partition, offsets[partition])
            pages[partition] = page
        if page:
            heapq.heappush(heap, _entry(partition, page[0]))


async def follow_partitions(
    client: Any, stream: str, offsets: dict[int, int], limit: int | None
) -> AsyncIterator[Item]:
    """New records of every partition as they are committed, ``limit`` in total (None: no
    limit); one long-polling task per partition feeds a bounded queue."""
    queue: asyncio.Queue[Item] = asyncio.Queue(FOLLOW_QUEUE_RECORDS)
    tasks = [asyncio.create_task(_poll(client, stream, p, offsets[p], queue)) for p in offsets]
    try:
        yielded = 0
        while limit is None or yielded < limit:
            yield await _next(queue, tasks)
            yielded += 1
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _next(queue: asyncio.Queue[Item], tasks: list[asyncio.Task[None]]) -> Item:
    """The next record, or the error of a poller that failed (a deleted stream)."""
    getter = asyncio.ensure_future(queue.get())
    done, _ = await asyncio.wait([getter, *tasks], return_when=asyncio.FIRST_COMPLETED)
    if getter in done:
        return getter.result()
    getter.cancel()
    for task in done:
        task.result()  # raises the poller's error
    raise UnavailableError(f"a poller of {len(tasks)} partition(s) stopped")  # unreachable


async def _poll(
    client: Any, stream: str, partition: int, offset: int, queue: asyncio.Queue[Item]
) -> None:
    while True:
        try:
            fetched = await client.fetch(
                stream, partition, offset, max_records=TAIL_PAGE_RECORDS, wait_ms=FOLLOW_WAIT_MS
            )
        except (NotLeaderError, UnavailableError):  # a leader change: ask again
            await asyncio.sleep(FOLLOW_WAIT_MS / 1000)
            continue
        for record in fetched.records:
            await queue.put((partition, record))
        offset = fetched.next_offset


async def _page(client: Any, stream: str, partition: int, offset: int) -> deque[Any]:
    fetched = await client.fetch(stream, partition, offset, max_records=TAIL_PAGE_RECORDS)
    return deque(fetched.records)


def _entry(partition: int, record: Any) -> tuple[int, int, int]:
    return (record.timestamp, partition, record.offset)
