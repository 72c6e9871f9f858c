"""Check every port a stack will listen on before starting anything.

Without this a second ``liftlog standalone`` on the default ports starts NATS, which fails, and
the user reads "address already in use" deep in a log tail, not knowing which flag to change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from liftlog.embedded.ports import port_is_free
from spark_log.errors import ProcessStartError


@dataclass(frozen=True)
class PlannedPort:
    """A port a component will bind: ``kind`` is one of the ``PORT_*`` names below (so the
    CLI can name the flag that moves it), ``role`` is how a user would say it."""

    port: int
    kind: str
    role: str


PORT_NATS = "nats"
PORT_NATS_MONITOR = "nats_monitor"
PORT_ZOOKEEPER = "zookeeper"
PORT_NODE_API = "node_api"
PORT_NODE_LIFTBRIDGE = "node_liftbridge"

__all__ = [
    "PORT_NATS",
    "PORT_NATS_MONITOR",
    "PORT_NODE_API",
    "PORT_NODE_LIFTBRIDGE",
    "PORT_ZOOKEEPER",
    "PlannedPort",
    "PortInUseError",
    "busy_ports",
    "port_is_free",
]


class PortInUseError(ProcessStartError):
    """Ports the stack needs are taken; nothing was started."""

    code = "port_in_use"

    def __init__(self, busy: Sequence[PlannedPort], host: str) -> None:
        self.busy = list(busy)
        listed = ", ".join(f"port {p.port} ({p.role})" for p in self.busy)
        verb = "is" if len(self.busy) == 1 else "are"
        super().__init__(f"{listed} {verb} in use on {host}")


def busy_ports(host: str, planned: Sequence[PlannedPort]) -> list[PlannedPort]:
    """The planned ports something else listens on now."""
    return [p for p in planned if not port_is_free(host, p.port)]
