"""Start and stop a group of components together (a NATS cluster, a ZooKeeper ensemble).

Members of a cluster are only ready once they see each other, so they must all be spawned
before any is waited for; stopping sends SIGTERM to all first so they shut down in parallel.
"""

from __future__ import annotations

from collections.abc import Sequence

from liftlog.embedded.component import Component
from liftlog.embedded.process import DEFAULT_STOP_TIMEOUT_S
from spark_log.errors import LiftlogError


def start_together(components: Sequence[Component]) -> None:
    """Spawn all, then wait for each; on any failure stop every one before re-raising."""
    try:
        for component in components:
            component.spawn()
        for component in components:
            component.wait_ready()
    except LiftlogError:
        stop_together(components)
        raise


def stop_together(
    components: Sequence[Component], timeout_s: float = DEFAULT_STOP_TIMEOUT_S
) -> None:
    """SIGTERM all first, then wait for (or SIGKILL) each."""
    for component in components:
        if component.is_running():
            component.process.terminate()
    for component in components:
        component.stop(timeout_s)
