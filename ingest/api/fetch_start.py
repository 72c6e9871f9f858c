"""Where a REST fetch starts: an offset, a timestamp, a named start, or after a cursor.

The route accepts one of them (``check_start_choice``); these turn the one given into an
offset, reading the lake when the start lies below the local log.
"""

from __future__ import annotations

from ingest.groups.cursors import CursorService
from ingest.replica.positions import named_start_offset
from ingest.replica.tiered_fetch import TieredReads
from spark_log.errors import CursorNotFoundError


async def fetch_start(
    reads: TieredReads, offset: int | None, timestamp: int | None, start: str | None
) -> int:
    """The offset a fetch starts at; with none given, ``earliest`` (the lake's first offset
    when the lake holds records below the log start)."""
    if timestamp is not None:
        return await reads.offset_for_timestamp(timestamp)
    if start is not None and start != "earliest":
        return named_start_offset(reads.log, start)
    if offset is not None:
        return offset
    return await reads.earliest_offset()


async def cursor_start(
    cursors: CursorService, stream: str, partition: int, cursor_id: str, fallback: str | None
) -> tuple[int | None, str | None]:
    """(offset, None) after the cursor's offset, or (None, ``fallback``) when it was never
    set and a fallback start was given."""
    try:
        view = await cursors.fetch(stream, partition, cursor_id, forwarded=False)
    except CursorNotFoundError:
        if fallback is None:
            raise
        return None, fallback
    return view.offset + 1, None
