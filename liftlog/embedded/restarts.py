"""Restarting nodes that exit unexpectedly, with bounded exponential backoff.

A dev stack should survive a crashed or OOM-killed node the way a supervisor (systemd,
Kubernetes) would keep it running; the backoff keeps a node that fails at start-up from
spinning, and a node that stays up long enough starts over at the first delay.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from liftlog.embedded.node import NodeProcess
from spark_log.errors import LiftlogError

RESTART_INITIAL_BACKOFF_S = 1.0
RESTART_BACKOFF_FACTOR = 2.0
RESTART_MAX_BACKOFF_S = 30.0
# A node that has run this long since its last restart is healthy again: the next crash
# waits only the initial backoff.
RESTART_RESET_AFTER_S = 60.0


def restart_delay_s(restart: int) -> float:
    """The wait before restart number ``restart`` (1-based): 1, 2, 4, ... up to the maximum."""
    delay = RESTART_INITIAL_BACKOFF_S * RESTART_BACKOFF_FACTOR ** (restart - 1)
    return float(min(delay, RESTART_MAX_BACKOFF_S))


class NodeRestarter:
    """Watches one node; ``check`` (called on every poll) notices an exit, waits out the
    backoff and starts the node again on the same config and data."""

    def __init__(
        self,
        node: NodeProcess,
        say: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.node = node
        self.restarts = 0
        self._say = say
        self._clock = clock
        self._due: float | None = None
        self._started_at = clock()

    def check(self) -> None:
        now = self._clock()
        if self._due is not None:
            if now >= self._due:
                self._restart(now)
            return
        if self.node.is_running():
            if now - self._started_at >= RESTART_RESET_AFTER_S:
                self.restarts = 0
            return
        self._schedule(now, f"exited with code {self.node.process.returncode}")

    def _schedule(self, now: float, what: str) -> None:
        self.restarts += 1
        delay = restart_delay_s(self.restarts)
        self._say(
            f"node {self.node.broker_id} {what}; restarting in {delay:.1f} s "
            f"(restart {self.restarts}); log: {self.node.log_path}"
        )
        self._due = now + delay

    def _restart(self, now: float) -> None:
        self._due = None
        self._started_at = now
        try:
            process = self.node.spawn()
        except LiftlogError as exc:
            self._schedule(now, f"could not be started ({exc.message})")
            return
        self._say(f"node {self.node.broker_id} restarted (pid {process.pid})")
