"""Cursor calls over REST (``/v1/streams/{s}/partitions/{p}/cursors/{id}``), in one place.

The CLI calls these functions directly; ``Client`` offers them as coroutines through
``CursorMixin`` and ``SyncClient`` as blocking methods. A cursor holds the offset of the last
record processed: a consumer resumes at ``fetch_cursor(...) + 1``, and ``None`` (never set) is
not ``0`` (record 0 processed) nor ``-1`` (set, nothing processed yet).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import quote

from spark_log.api_models import CursorDeleted, CursorView
from spark_log.client.group_session import backoff_s, retriable
from spark_log.client.rest import RestClient
from spark_log.errors import CursorNotFoundError, LiftlogError

T = TypeVar("T")

CURSOR_RETRY_S = 30.0
"""How long a cursor call goes on through a leader or ISR change of its ``__cursors``
partition (421, 503, not enough replicas, a timeout). Retrying is safe: setting a cursor to an
offset twice stores one cursor, and a delete or a read repeated changes nothing more."""


def _retried(call: Callable[[], T]) -> T:
    deadline = time.monotonic() + CURSOR_RETRY_S
    attempt = 0
    while True:
        try:
            return call()
        except LiftlogError as exc:
            wait_s = backoff_s(attempt)
            if not retriable(exc) or time.monotonic() + wait_s > deadline:
                raise
        time.sleep(wait_s)
        attempt += 1


def cursor_path(stream: str, partition: int, cursor_id: str) -> str:
    return f"/v1/streams/{stream}/partitions/{partition}/cursors/{quote(cursor_id, safe='')}"


def set_cursor(
    rest: RestClient, cursor_id: str, stream: str, partition: int, offset: int
) -> CursorView:
    """Store ``offset`` as the last offset ``cursor_id`` processed in ``stream/partition``;
    returns once the ``__cursors`` ISR holds it."""
    path = cursor_path(stream, partition, cursor_id)
    body = {"offset": offset}
    return CursorView.from_json(_retried(lambda: rest.request("PUT", path, json_body=body)).json())


def fetch_cursor(rest: RestClient, cursor_id: str, stream: str, partition: int) -> int | None:
    """The cursor's offset, or None when it was never set."""
    view = describe_cursor(rest, cursor_id, stream, partition)
    return None if view is None else view.offset


def describe_cursor(
    rest: RestClient, cursor_id: str, stream: str, partition: int
) -> CursorView | None:
    """The cursor with when it was set, or None when it was never set."""
    try:
        body = _retried(lambda: rest.get_json(cursor_path(stream, partition, cursor_id)))
    except CursorNotFoundError:
        return None
    return CursorView.from_json(body)


def delete_cursor(rest: RestClient, cursor_id: str, stream: str, partition: int) -> CursorDeleted:
    """Forget the cursor: it reads as never set again."""
    path = cursor_path(stream, partition, cursor_id)
    return CursorDeleted.from_json(_retried(lambda: rest.request("DELETE", path)).json())


class CursorMixin:
    """``Client``'s cursor calls: the functions above, off the event loop."""

    rest: RestClient

    async def set_cursor(
        self, cursor_id: str, stream: str, partition: int, offset: int
    ) -> CursorView:
        return await asyncio.to_thread(set_cursor, self.rest, cursor_id, stream, partition, offset)

    async def fetch_cursor(self, cursor_id: str, stream: str, partition: int) -> int | None:
        return await asyncio.to_thread(fetch_cursor, self.rest, cursor_id, stream, partition)

    async def delete_cursor(self, cursor_id: str, stream: str, partition: int) -> CursorDeleted:
        return await asyncio.to_thread(delete_cursor, self.rest, cursor_id, stream, partition)
