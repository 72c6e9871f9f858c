"""uvicorn inside the node's own event loop (no second loop, no thread)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Generator
from typing import TYPE_CHECKING

import uvicorn

from ingest.api.app import create_app

if TYPE_CHECKING:
    from ingest.node_view import NodeView as IngestNode

API_START_TIMEOUT_S = 10.0


class _EmbeddedServer(uvicorn.Server):
    """The node owns SIGINT/SIGTERM, so uvicorn must not install its own handlers."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class ApiServer:
    def __init__(self, node: IngestNode, host: str, port: int) -> None:
        config = uvicorn.Config(
            create_app(node),
            host=host,
            port=port,
            log_level="warning",
            lifespan="off",
            access_log=False,
        )
        self._server = _EmbeddedServer(config)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._server.serve(), name="api")
        async with asyncio.timeout(API_START_TIMEOUT_S):
            while not self._server.started:
                if self._task.done():
                    self._task.result()  # re-raises the bind error
                    raise OSError("the API server stopped during start-up")
                await asyncio.sleep(0.01)

    async def stop(self) -> None:
        if self._task is None:
            return
        self._server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
