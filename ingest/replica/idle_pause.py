"""Auto-pause of idle partitions (Liftbridge's ``autoPauseTime``) and their resume.

A leader that has appended nothing for the stream's ``auto_pause_ms`` marks its partition in
the stream znode's ``idle_paused_partitions`` (a CAS, kept apart from the operator's
``paused``) and stops its idle-time upkeep. It keeps its NATS subscription, so the next
publish (NATS or REST) is not lost as in Liftbridge: the writer holds it, removes the mark
(CAS again) and then stores and acknowledges it. A consumer fetch resumes the partition too.
If the mark cannot be removed within ``RESUME_TIMEOUT_S`` (ZooKeeper unavailable), the held
publishes are refused with ``stream_paused``.

``IdleClock`` is the pure decision; ``IdlePause`` the replica's side of it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ingest.clock import Clock
from ingest.replication.partition_state import Partition
from spark_log.errors import LiftlogError, StreamPausedError
from spark_log.stream_spec import StreamSpec

log = logging.getLogger("liftlog.idle_pause")

RESUME_TIMEOUT_S = 5.0
"""How long a publish to an idle-paused partition waits for the resume before it is refused."""

IdleMarker = Callable[[bool], Awaitable[None]]
"""Marks this partition idle-paused (True) or resumed (False) in ZooKeeper (the CAS)."""


@dataclass
class IdleClock:
    """When the partition was last active, and whether it has been idle long enough.

    Appends always count as activity. Consumer fetches count only with
    ``auto_pause_disable_if_subscribers`` (Liftbridge's ``autoPauseDisableIfSubscribers``): a
    fetch waiting for records, or one made within ``auto_pause_ms``, keeps the partition up.
    """

    last_append_ms: int
    last_fetch_ms: int | None = None
    waiting_fetches: int = 0

    def appended(self, now_ms: int) -> None:
        self.last_append_ms = now_ms

    def fetch_started(self, now_ms: int) -> None:
        self.last_fetch_ms = now_ms
        self.waiting_fetches += 1

    def fetch_ended(self, now_ms: int) -> None:
        self.last_fetch_ms = now_ms
        self.waiting_fetches = max(0, self.waiting_fetches - 1)

    def idle(self, spec: StreamSpec, now_ms: int) -> bool:
        """Whether ``spec`` wants the partition paused now (never for internal streams)."""
        limit = spec.auto_pause_ms
        if limit is None or spec.internal or now_ms - self.last_append_ms < limit:
            return False
        if not spec.auto_pause_disable_if_subscribers:
            return True
        recent_fetch = self.last_fetch_ms is not None and now_ms - self.last_fetch_ms < limit
        return self.waiting_fetches == 0 and not recent_fetch


class IdlePause:
    """One replica's auto-pause: the idle check its leader runs, and the resume it awaits."""

    def __init__(self, partition: Partition, clock: Clock) -> None:
        self._partition = partition
        self._clock = clock
        self.clock = IdleClock(clock.now_ms())
        self.marker: IdleMarker | None = None
        self._resuming: asyncio.Task[None] | None = None
        self._background: set[asyncio.Future[None]] = set()

    def adopt(self, idle: bool) -> None:
        """Take the mark as ZooKeeper holds it (every reconcile). A partition resumed by
        someone else (an operator's resume) starts a new idle period from now."""
        if idle == self._partition.idle_paused:
            return
        log.info("%s: %s", self._partition.name, "idle-paused" if idle else "resumed")
        self._partition.idle_paused = idle
        if not idle:
            self.clock.appended(self._clock.now_ms())

    def restart(self) -> None:
        """A new leadership: its idle period starts now."""
        self.clock.appended(self._clock.now_ms())

    async def pause_if_idle(self, spec: StreamSpec) -> None:
        """Leader's upkeep: mark the partition idle-paused once ``spec`` says it is idle. A
        failed mark (ZooKeeper unavailable) is tried again after another idle period."""
        part = self._partition
        if self.marker is None or part.idle_paused or part.paused or not part.is_leader:
            return
        now = self._clock.now_ms()
        if part.offline_reason is not None or not self.clock.idle(spec, now):
            return
        try:
            await self.marker(True)
        except LiftlogError as exc:
            log.warning("%s: cannot mark idle-paused: %s", part.name, exc.message)
            self.clock.appended(now)
            return
        self.adopt(True)  # the writer awaited the mark: nothing was appended meanwhile

    async def resume(self) -> None:
        """Remove the idle mark; StreamPausedError if that takes over ``RESUME_TIMEOUT_S``
        or fails. Concurrent callers share one removal."""
        if not self._partition.idle_paused:
            return
        task = self._resuming
        if task is None or task.done():
            task = asyncio.create_task(self._unmark(), name=f"resume-{self._partition.name}")
            self._resuming = task
        try:
            await asyncio.wait_for(asyncio.shield(task), RESUME_TIMEOUT_S)
        except TimeoutError as exc:
            raise self._refusal(f"its resume took over {RESUME_TIMEOUT_S:.0f}s") from exc
        except LiftlogError as exc:
            raise self._refusal(exc.message) from exc

    def resume_soon(self) -> None:
        """Resume in the background (a consumer fetch reads without waiting for it)."""
        if self._partition.idle_paused and self._partition.is_leader:
            task = asyncio.ensure_future(self._resume_logged())
            self._background.add(task)  # a reference, so the task is not collected early
            task.add_done_callback(self._background.discard)

    async def _resume_logged(self) -> None:
        try:
            await self.resume()
        except StreamPausedError as exc:
            log.warning("%s: %s", self._partition.name, exc.message)

    async def _unmark(self) -> None:
        if self.marker is not None:
            await self.marker(False)
        self.adopt(False)

    def _refusal(self, why: str) -> StreamPausedError:
        return StreamPausedError(
            f"{self._partition.name} was paused for idleness and could not be resumed: {why}"
        )
