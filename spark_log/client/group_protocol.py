"""A group member's REST calls to its coordinator (``/v1/groups/{group}/...``).

They run on a small thread pool of their own, not on the event loop's default executor:
partition fetches long-poll there and could otherwise hold every thread while a heartbeat
waits, so a busy consumer would lose its session. Any node answers (non-coordinators
forward), so ``RestClient`` failing over between servers is enough to reach a new
coordinator after a failover.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor

from spark_log.api_models import GroupCommitted, GroupOffsets, MemberAssignment
from spark_log.client.group_admin import group_path
from spark_log.client.group_session import StreamPartition
from spark_log.client.rest import RestClient
from spark_log.json_types import JsonValue

COORDINATOR_THREADS = 3


class GroupProtocol:
    """Join, heartbeat, leave, commit and fetch committed offsets of one group."""

    def __init__(self, rest: RestClient, group: str) -> None:
        self.rest = rest
        self.group = group
        self._path = group_path(group)
        self._pool = ThreadPoolExecutor(COORDINATOR_THREADS, thread_name_prefix="liftlog-group")

    async def join(
        self,
        streams: Iterable[str],
        instance_id: str | None,
        session_timeout_ms: int | None,
        client_id: str | None = None,
    ) -> MemberAssignment:
        body = {
            "member_id": None,
            "instance_id": instance_id,
            "streams": sorted(set(streams)),
            "session_timeout_ms": session_timeout_ms,
            "client_id": client_id,
        }
        return MemberAssignment.from_json(await self._call("POST", "/members", body))

    async def heartbeat(
        self,
        member_id: str,
        member_epoch: int,
        owned: Mapping[str, list[int]],
        timeout_s: float,
    ) -> MemberAssignment:
        body = {"member_epoch": member_epoch, "owned": dict(owned)}
        path = f"/members/{member_id}/heartbeat"
        return MemberAssignment.from_json(await self._call("POST", path, body, timeout_s))

    async def leave(self, member_id: str) -> None:
        await self._call("DELETE", f"/members/{member_id}")

    async def commit(
        self, member_id: str, member_epoch: int, offsets: Mapping[StreamPartition, int]
    ) -> GroupCommitted:
        body = {
            "member_id": member_id,
            "member_epoch": member_epoch,
            "offsets": [
                {"stream": tp.stream, "partition": tp.partition, "offset": offset}
                for tp, offset in sorted(offsets.items())
            ],
        }
        return GroupCommitted.from_json(await self._call("POST", "/offsets", body))

    async def committed(self, stream: str) -> dict[StreamPartition, int | None]:
        """The committed offset of every partition of ``stream`` (None: never committed)."""
        loop = asyncio.get_running_loop()
        call = functools.partial(
            self.rest.get_json, f"{self._path}/offsets", params={"stream": stream}
        )
        body = GroupOffsets.from_json(await loop.run_in_executor(self._pool, call))
        return {StreamPartition(o.stream, o.partition): o.offset for o in body.offsets}

    def close(self) -> None:
        """Stop the pool; a request still in a thread finishes there, unobserved."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    async def _call(
        self, method: str, suffix: str, body: object = None, timeout_s: float | None = None
    ) -> JsonValue:
        loop = asyncio.get_running_loop()
        call = functools.partial(
            self.rest.request,
            method,
            f"{self._path}{suffix}",
            json_body=body,
            timeout_s=timeout_s,
        )
        resp = await loop.run_in_executor(self._pool, call)
        return resp.json()
