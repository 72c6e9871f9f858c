"""``liftlog tail -n N``: the last N records, as Unix ``tail -n`` prints the last lines.

The merge keeps each partition's order, so the last N merged records lie within the last N of
each partition: every partition is read from N records before its end (or its stop), the
merge passes through a ring of N, and the ring is what comes out. Without N, the merge itself.
"""

from __future__ import annotations

import argparse
from collections import deque
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from liftlog.cli.merge import Item, merged_records
from spark_log.client.positions import STOP_LATEST, Stop

if TYPE_CHECKING:
    from spark_log.client import Client


def record_count(text: str) -> int:
    """``-n`` and ``--max``: a count of records, 0 or more (a usage error otherwise)."""
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"wants a number of records, got {text!r}") from None
    if count < 0:
        raise argparse.ArgumentTypeError(f"wants 0 or more records, got {count}")
    return count


async def caught_up(
    client: Client, stream: str, offsets: dict[int, int], stop: Stop | None, last: int | None
) -> AsyncIterator[Item]:
    """The catch-up of ``tail``: every record from ``offsets`` merged (``last`` None), or
    only the last ``last`` of them; ``offsets`` ends past every record read, for ``-f``."""
    if last is None:
        async for item in merged_records(client, stream, offsets, stop):
            yield item
        return
    for partition, offset in offsets.items():
        end = await client.start_offset(stream, partition, "new-only")  # the HW
        offsets[partition] = last_start(offset, end, stop, last)
    ring: deque[Item] = deque(maxlen=last)
    async for item in merged_records(client, stream, offsets, stop):
        ring.append(item)
    for item in ring:
        yield item


def last_start(offset: int, end: int, stop: Stop | None, last: int) -> int:
    """Where a partition's last ``last`` records before ``end`` (the HW) or an offset stop
    begin, never before ``offset``; a time stop is found only by reading, from ``offset``."""
    if isinstance(stop, int):
        end = min(end, stop + 1)
    elif stop is not None and stop != STOP_LATEST:
        return offset
    return max(offset, end - last)
