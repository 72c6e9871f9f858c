"""Restarting components that exit unexpectedly, with bounded exponential backoff.

A dev stack should survive a crashed or OOM-killed process the way a supervisor (systemd,
Kubernetes) would keep it running; the backoff keeps a process that fails at start-up from
spinning, and one that stays up long enough starts over at the first delay. Ingest nodes are
always restarted; with ``--ha`` so are the NATS servers, the ZooKeeper servers and SeaweedFS,
whose peers carry the cluster while one of them is down.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from liftlog.embedded.component import Component
from spark_log.errors import LiftlogError

RESTART_INITIAL_BACKOFF_S = 1.0
RESTART_BACKOFF_FACTOR = 2.0
RESTART_MAX_BACKOFF_S = 30.0
# A component that has run this long since its last restart is healthy again: the next crash
# waits only the initial backoff.
RESTART_RESET_AFTER_S = 60.0


def restart_delay_s(restart: int) -> float:
    """The wait before restart number ``restart`` (1-based): 1, 2, 4, ... up to the maximum."""
    delay = RESTART_INITIAL_BACKOFF_S * RESTART_BACKOFF_FACTOR ** (restart - 1)
    return float(min(delay, RESTART_MAX_BACKOFF_S))


class ComponentRestarter:
    """Watches one component; ``check`` (called on every poll) notices an exit, waits out the
    backoff and starts the component again on the same config and data.

    The restart only spawns the process (it does not wait for readiness): the poll loop must
    keep watching every other component meanwhile, and a process that dies again while
    starting is noticed as another exit, with a longer wait.
    """

    def __init__(
        self,
        component: Component,
        say: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.component = component
        self.restarts = 0
        self._say = say
        self._clock = clock
        self._due: float | None = None
        self._started_at = clock()

    @property
    def pending(self) -> bool:
        """True while an exit has been noticed and the restart is not yet due."""
        return self._due is not None

    def check(self) -> None:
        """Notice an exit, or restart once the backoff has passed; cheap when all is well."""
        now = self._clock()
        if self._due is not None:
            if now >= self._due:
                self._restart(now)
            return
        if self.component.is_running():
            if now - self._started_at >= RESTART_RESET_AFTER_S:
                self.restarts = 0
            return
        self._schedule(now, f"exited with code {self.component.process.returncode}")

    def _schedule(self, now: float, what: str) -> None:
        self.restarts += 1
        delay = restart_delay_s(self.restarts)
        self._say(
            f"{self.component.label} {what}; restarting in {delay:.1f} s "
            f"(restart {self.restarts}); log: {self.component.log_path}"
        )
        self._due = now + delay

    def _restart(self, now: float) -> None:
        self._due = None
        self._started_at = now
        try:
            process = self.component.spawn()
        except LiftlogError as exc:
            self._schedule(now, f"could not be started ({exc.message})")
            return
        self._say(f"{self.component.label} restarted (pid {process.pid})")
