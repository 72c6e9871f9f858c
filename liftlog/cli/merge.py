"""Reading several partitions as one stream of records.

Catching up: records up to each partition's high watermark as of the start are merged by
(timestamp, partition, offset), holding at most one fetched page per partition in memory;
records committed meanwhile are not waited for (``tail`` ends; ``tail -f`` follows them).
Following: every partition long-polls at once and records are yielded as they arrive (time
order across partitions cannot be known before the later records exist). Both read each
partition through ``Client.subscribe``, which owns the fetch and its retries, and take an
optional stop position: a partition that reaches it is done, and following ends once every
partition is.
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from spark_log.client.positions import Stop

if TYPE_CHECKING:
    from spark_log.client import Client
    from spark_log.log import Record

TAIL_PAGE_RECORDS = 1000
FOLLOW_WAIT_MS = 1000
FOLLOW_QUEUE_RECORDS = 10_000

Item = tuple[int, "Record"]  # (partition, record)


async def merged_records(
    client: Client, stream: str, offsets: dict[int, int], stop: Stop | None = None
) -> AsyncIterator[Item]:
    """Committed records from ``offsets`` (partition → first offset) up to each partition's
    high watermark taken at the start (or ``stop``, if earlier), merged by timestamp;
    ``offsets`` is advanced past every record yielded. Ends even while writes continue."""
    readers = {
        partition: client.subscribe(
            stream,
            partition,
            offsets[partition],
            stop=stop,
            fetch_max_records=TAIL_PAGE_RECORDS,
            stop_at_end=True,
        )
        for partition in offsets
        if not past_stop(offsets[partition], stop)
    }
    try:
        heap: list[tuple[int, int, int, Record]] = []
        for partition, reader in readers.items():  # the first step takes the partition's HW
            record = await _next_or_none(reader)
            if record is not None:
                heap.append(_entry(partition, record))
        heapq.heapify(heap)
        while heap:
            _ts, partition, _offset, record = heapq.heappop(heap)
            offsets[partition] = record.offset + 1
            yield partition, record
            following = await _next_or_none(readers[partition])
            if following is not None:
                heapq.heappush(heap, _entry(partition, following))
    finally:
        for reader in readers.values():
            await reader.aclose()


async def follow_partitions(
    client: Client,
    stream: str,
    offsets: dict[int, int],
    limit: int | None,
    stop: Stop | None = None,
) -> AsyncIterator[Item]:
    """New records of every partition as they are committed, ``limit`` in total (None: no
    limit), until every partition reaches ``stop`` (None: forever); one long-polling task
    per partition feeds a bounded queue."""
    queue: asyncio.Queue[Item] = asyncio.Queue(FOLLOW_QUEUE_RECORDS)
    tasks = [
        asyncio.create_task(_poll(client, stream, p, offsets[p], queue, stop))
        for p in offsets
        if not past_stop(offsets[p], stop)
    ]
    try:
        yielded = 0
        while limit is None or yielded < limit:
            item = await _next(queue, tasks)
            if item is None:
                return
            yield item
            yielded += 1
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _next(queue: asyncio.Queue[Item], tasks: list[asyncio.Task[None]]) -> Item | None:
    """The next record; None once every poller has finished (each partition reached its
    stop) and nothing is left queued; the error of a poller that failed (a deleted stream)."""
    while True:
        if not queue.empty():
            return queue.get_nowait()
        for task in tasks:
            if task.done():
                task.result()  # raises the poller's error
        running = [task for task in tasks if not task.done()]
        if not running:
            return None
        getter = asyncio.ensure_future(queue.get())
        done, _ = await asyncio.wait([getter, *running], return_when=asyncio.FIRST_COMPLETED)
        if getter in done:
            return getter.result()
        getter.cancel()


async def _poll(
    client: Client,
    stream: str,
    partition: int,
    offset: int,
    queue: asyncio.Queue[Item],
    stop: Stop | None,
) -> None:
    records = client.subscribe(
        stream,
        partition,
        offset,
        stop=stop,
        poll_wait_ms=FOLLOW_WAIT_MS,
        fetch_max_records=TAIL_PAGE_RECORDS,
    )
    try:
        async for record in records:
            await queue.put((partition, record))
    finally:
        await records.aclose()


def past_stop(offset: int, stop: Stop | None) -> bool:
    """Whether a partition read from ``offset`` is already past an offset stop (its
    subscription would have nothing to read; ``Client.subscribe`` refuses it as a mistake)."""
    return isinstance(stop, int) and offset > stop


async def _next_or_none(records: AsyncIterator[Record]) -> Record | None:
    try:
        return await anext(records)
    except StopAsyncIteration:
        return None


def _entry(partition: int, record: Record) -> tuple[int, int, int, Record]:
    # (timestamp, partition, offset) is unique, so the record itself is never compared
    return (record.timestamp, partition, record.offset, record)
