"""Draining the activity queue (``coordinator.activity``) into the ``__activity`` stream.

Every node runs one; only the leader of ``__activity``'s one partition drains. It appends
each queued event in id order (acks=all) and then deletes its znode. Leading the partition is
what lets it write, and a leader deposed while appending cannot commit (its followers follow
the new leader), so no two nodes publish at once without a coordinator of their own.

At each leadership the publisher reads the last event id in ``__activity`` first: an event
appended by a leader that died before deleting its znode is deleted, not appended again. So
the ids in the stream are strictly increasing and every event appears once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging

from coordinator.activity import ActivityLog
from coordinator.zk import WatchHandle
from ingest.admin.node_view import NodeView
from ingest.produce.request import local_request
from ingest.replica.committed import await_log_committed
from ingest.replica.replica import PartitionReplica
from spark_log.errors import LiftlogError, NotLeaderError, StreamNotFoundError
from spark_log.stream_spec import ACTIVITY_STREAM

log = logging.getLogger("liftlog.activity")

POLL_S = 1.0
"""Also look without a watch event: leadership of ``__activity`` may have come to this node."""
BACKOFF_MIN_S = 1.0
BACKOFF_MAX_S = 10.0
LOAD_TIMEOUT_S = 10.0
NO_EVENT = -1  # ZooKeeper's sequence numbers start at 0


class ActivityPublisher:
    def __init__(self, node: NodeView, activity: ActivityLog) -> None:
        self._node = node
        self._activity = activity
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._watch: WatchHandle | None = None
        self._epoch: int | None = None  # the leadership whose last id is known
        self._last_id = NO_EVENT

    async def start(self) -> None:
        loop = asyncio.get_running_loop()

        def wake() -> None:  # called on kazoo's thread: hop onto the loop
            loop.call_soon_threadsafe(self._wake.set)

        self._watch = await asyncio.to_thread(self._activity.watch, wake)
        self._task = asyncio.create_task(self._run(), name="activity-publisher")

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        backoff = BACKOFF_MIN_S
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), POLL_S)
            self._wake.clear()
            try:
                await self._drain()
                backoff = BACKOFF_MIN_S
            except LiftlogError as exc:
                log.warning("activity: cannot publish yet (%s); retry in %.0f s", exc, backoff)
                self._epoch = None  # read the last id again: the append may have landed
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX_S)

    async def _drain(self) -> None:
        replica = self._led_partition()
        if replica is None:
            self._epoch = None
            return
        if self._epoch != replica.state.leader_epoch:
            self._last_id = await _last_event_id(replica)
            self._epoch = replica.state.leader_epoch
        for event_id, event in await asyncio.to_thread(self._activity.pending):
            if event_id > self._last_id:
                await _append(replica, event_id, event)
                self._last_id = event_id
            await asyncio.to_thread(self._activity.remove, event_id)

    def _led_partition(self) -> PartitionReplica | None:
        try:
            replica = self._node.replicas.replica(ACTIVITY_STREAM, 0)
        except (NotLeaderError, StreamNotFoundError):
            return None
        return replica if replica.state.is_leader else None


async def _append(replica: PartitionReplica, event_id: int, event: dict[str, object]) -> None:
    value = json.dumps({"id": event_id, **event}, separators=(",", ":")).encode()
    request = local_request(replica.spec.subject, "all", key=str(event_id).encode(), value=value)
    await replica.produce([request])


async def _last_event_id(replica: PartitionReplica) -> int:
    """The id of the last event ``__activity`` holds (its key), once it is all committed."""
    end = await await_log_committed(replica, LOAD_TIMEOUT_S)
    if end <= replica.log.log_start_offset:
        return NO_EVENT
    result = await replica.fetch(end - 1, 1, 1024 * 1024, 0)
    if not result.records or result.records[-1].key is None:
        return NO_EVENT
    return int(result.records[-1].key)
