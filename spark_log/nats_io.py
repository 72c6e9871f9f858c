"""nats-py's read buffer, widened for megabyte messages (follower fetches, producer batches).

nats-py reads its socket through an asyncio StreamReader whose limit is the module constant
``DEFAULT_BUFFER_SIZE`` (32 KiB): the reader pauses the socket every 64 KiB and the parser is
fed 32 KiB at a time, so a 4 MiB fetch response costs hundreds of loop turns. The library has
no option for it; the constant is read at connect and on every read, so setting it before
connecting is enough. Small messages are unaffected (a read returns what is there).
"""

from __future__ import annotations

import nats.aio.client

READ_BUFFER_BYTES = 4 * 1024 * 1024


def widen_read_buffer(size: int = READ_BUFFER_BYTES) -> None:
    """Raise nats-py's socket read size and reader limit to ``size`` (never lowers it)."""
    current = nats.aio.client.DEFAULT_BUFFER_SIZE
    if size > current:
        nats.aio.client.DEFAULT_BUFFER_SIZE = size
