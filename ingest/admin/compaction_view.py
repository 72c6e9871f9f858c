"""How far key compaction has cleaned a stream's lake table, as describe shows it.

Key compaction runs outside the nodes, so only the table knows; every describe reads it. The
read must never hold what else needs the object store: it runs on threads of its own (not
the lake's, which exports and tier reads use), one read at a time per table, and a describe
waits for it at most ``WAIT_S``. When the store stops answering, the one read in flight stays
stuck in the store's own timeouts while describes answer with what was last read.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from spark_log.errors import LiftlogError
from spark_log.lake import LakeTable
from spark_log.lake.compaction_state import CompactionState

WAIT_S = 2.0
READ_THREADS = 2

_pool = ThreadPoolExecutor(max_workers=READ_THREADS, thread_name_prefix="lake-compaction-view")
_known: dict[str, CompactionState | None] = {}
_reading: dict[str, asyncio.Future[CompactionState | None]] = {}


async def compaction_state(table: LakeTable, partitions: int) -> CompactionState | None:
    """The table's compaction state, read now, or the last one read when the table does not
    answer within ``WAIT_S`` (None if never read)."""
    reading = _reading.get(table.uri)
    if reading is None:
        reading = asyncio.ensure_future(_read(table, partitions))
        _reading[table.uri] = reading
    try:
        return await asyncio.wait_for(asyncio.shield(reading), WAIT_S)
    except TimeoutError:
        return _known.get(table.uri)


async def _read(table: LakeTable, partitions: int) -> CompactionState | None:
    loop = asyncio.get_running_loop()
    try:
        state = await loop.run_in_executor(_pool, table.compaction_state, partitions)
    except (LiftlogError, OSError):
        state = _known.get(table.uri)
    finally:
        _reading.pop(table.uri, None)
    _known[table.uri] = state
    return state
