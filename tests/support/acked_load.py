"""Background acks=all publishers for fault tests: each subclass publishes in ``_run`` and
records what was acked; the test waits for progress on an event (no polling sleeps)."""

from __future__ import annotations

import asyncio
from typing import Any

from spark_log.client import Client


class AckedLoad:
    def __init__(self, client: Client, stream: str, publishers: int) -> None:
        self.client, self.stream = client, stream
        self.acked: dict[Any, Any] = {}
        self.stop = asyncio.Event()
        self.progress = asyncio.Event()
        self.tasks = [asyncio.create_task(self._run(w)) for w in range(publishers)]

    async def _run(self, worker: int) -> None:
        raise NotImplementedError

    def _record(self, key: Any, value: Any) -> None:
        self.acked[key] = value
        self.progress.set()

    async def wait_acked(self, count: int, timeout_s: float) -> None:
        """Until ``len(self.acked)`` reaches ``count`` (TimeoutError after ``timeout_s``)."""
        async with asyncio.timeout(timeout_s):
            while len(self.acked) < count:
                self.progress.clear()
                await self.progress.wait()

    async def finish(self) -> None:
        self.stop.set()
        await asyncio.gather(*self.tasks)
