"""Many writers at once, or one exclusive holder with no writer in flight.

A ``__cursors`` snapshot copies the live keys from memory: a write appended but not yet in
memory would be left out of the copy and then deleted with the segments before it. The gate
lets writes run concurrently (their appends share the leader's write cycles) and makes a
snapshot wait for the ones in flight while holding new ones back.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class WriteGate:
    def __init__(self) -> None:
        self._changed = asyncio.Condition()
        self._writers = 0
        self._exclusive = False

    @asynccontextmanager
    async def writing(self) -> AsyncIterator[None]:
        async with self._changed:
            await self._changed.wait_for(lambda: not self._exclusive)
            self._writers += 1
        try:
            yield
        finally:
            async with self._changed:
                self._writers -= 1
                self._changed.notify_all()

    @asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        async with self._changed:
            await self._changed.wait_for(lambda: not self._exclusive)
            self._exclusive = True
            await self._changed.wait_for(lambda: self._writers == 0)
        try:
            yield
        finally:
            async with self._changed:
                self._exclusive = False
                self._changed.notify_all()
