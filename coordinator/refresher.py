"""The thread behind a node's watched caches (tokens and ACLs, the schema registry).

A ZooKeeper watch runs on kazoo's thread, which must not block: it only calls ``wake``. This
thread then runs the cache's ``refresh`` (blocking ZooKeeper reads), also every
``resync_s`` in case a watch event was lost with a connection, and again after
``retry_s`` when a refresh failed. It outlives any error a refresh raises: a dead refresher
would freeze the cache on this node for good.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from coordinator.errors import CoordinatorError

log = logging.getLogger("liftlog.refresher")


class Refresher:
    """Runs ``refresh`` when woken, every ``resync_s``, and ``retry_s`` after a failure."""

    def __init__(
        self, name: str, refresh: Callable[[], None], resync_s: float, retry_s: float
    ) -> None:
        self._name = name
        self._refresh = refresh
        self._resync_s = resync_s
        self._retry_s = retry_s
        self._wanted = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Ask for a refresh soon (safe from any thread; never blocks)."""
        self._wanted.set()

    def stop(self) -> None:
        self._stopped.set()
        self._wanted.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stopped.is_set():
            self._wanted.wait(self._resync_s)
            self._wanted.clear()
            if self._stopped.is_set():
                return
            try:
                self._refresh()
            except CoordinatorError as exc:
                log.warning("%s: could not refresh (%s); retrying", self._name, exc.message)
                self._retry_soon()
            except Exception:
                log.exception("%s: refreshing failed; retrying", self._name)
                self._retry_soon()

    def _retry_soon(self) -> None:
        self._stopped.wait(self._retry_s)
        self._wanted.set()
