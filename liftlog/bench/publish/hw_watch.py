"""Watches a partition's HW from a thread, timestamping the moment it reaches a target.

A thread (not a task on the publisher's event loop) polls, so the timestamp is not delayed
while the publisher loop is busy pushing messages: the "recorded" time is the node's, within
one poll interval.
"""

from __future__ import annotations

import threading
import time

from liftlog.bench.publish.settings import HW_POLL_INTERVAL_S
from liftlog.bench.toolkit.node_probe import high_watermark
from spark_log.client.rest import RestClient
from spark_log.errors import LiftlogError


class HwWatcher:
    """Polls the HW until it reaches ``target`` or ``stop`` is called (use as a context)."""

    def __init__(
        self,
        rest: RestClient,
        stream: str,
        target: int,
        interval_s: float = HW_POLL_INTERVAL_S,
    ) -> None:
        self.target = target
        self.hw = 0
        self.changed_at = time.monotonic()
        self.reached_at: float | None = None
        self.poll_errors = 0
        self._rest = rest
        self._stream = stream
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"hw-watch-{stream}", daemon=True)

    def __enter__(self) -> HwWatcher:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                hw = high_watermark(self._rest, self._stream)
            except LiftlogError:
                self.poll_errors += 1
            else:
                now = time.monotonic()
                if hw != self.hw:
                    self.hw, self.changed_at = hw, now
                if hw >= self.target:
                    self.reached_at = now
                    return
            self._stop.wait(self._interval_s)
