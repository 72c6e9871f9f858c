"""``/v1/streams/{stream}/partitions/{partition}/cursors/{cursor_id}``: durable cursors.

Any node answers; the leader of the cursor's ``__cursors`` partition serves, another node
forwards to it (docs/consumers.md).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Protocol

from fastapi import FastAPI, Request

from ingest.api.models import CursorSet
from ingest.groups.cursors import HEADER_FORWARDED, CursorService
from spark_log.api_models import CursorDeleted, CursorView

CURSOR_PATH = "/v1/streams/{stream}/partitions/{partition}/cursors/{cursor_id}"


class CursorGuard(Protocol):
    """Called before a set or delete; raises to refuse it (a ``__group:`` cursor of a group
    with members)."""

    def __call__(self, cursor_id: str, *, forwarded: bool) -> Awaitable[None]: ...


async def _no_guard(cursor_id: str, *, forwarded: bool) -> None:
    return None


def install_cursor_routes(
    app: FastAPI, cursors: CursorService, guard: CursorGuard = _no_guard
) -> None:
    @app.get(CURSOR_PATH, tags=["cursors"], response_model=CursorView)
    async def fetch_cursor(
        stream: str, partition: int, cursor_id: str, request: Request
    ) -> CursorView:
        """The cursor's offset (the last offset its consumer processed); 404
        ``cursor_not_found`` when it was never set."""
        return await cursors.fetch(stream, partition, cursor_id, forwarded=_forwarded(request))

    @app.put(CURSOR_PATH, tags=["cursors"], response_model=CursorView)
    async def set_cursor(
        stream: str, partition: int, cursor_id: str, body: CursorSet, request: Request
    ) -> CursorView:
        """Store the cursor (acks=all in ``__cursors``); answered once it is committed."""
        await guard(cursor_id, forwarded=_forwarded(request))
        return await cursors.set(
            stream, partition, cursor_id, body.offset, forwarded=_forwarded(request)
        )

    @app.delete(CURSOR_PATH, tags=["cursors"], response_model=CursorDeleted)
    async def delete_cursor(
        stream: str, partition: int, cursor_id: str, request: Request
    ) -> CursorDeleted:
        """Forget the cursor: it reads as never set again."""
        await guard(cursor_id, forwarded=_forwarded(request))
        return await cursors.delete(stream, partition, cursor_id, forwarded=_forwarded(request))


def _forwarded(request: Request) -> bool:
    return request.headers.get(HEADER_FORWARDED) == "1"
