"""Start the real components (nats-server, ZooKeeper, ingest nodes) as child processes.

This is the embedded default behind ``liftlog standalone`` and the test fixtures: the real
binaries, started and stopped by PID, never mocks. The package uses the standard library only
(it must not import kazoo, pyspark or fastapi) so the core stays light. The names below load
on first use, so a module of the package (the command line's defaults) imports alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = [
    "ChildProcess",
    "NatsServer",
    "NodeProcess",
    "Standalone",
    "ZooKeeperServer",
    "free_port",
]

if TYPE_CHECKING:
    from liftlog.embedded.nats import NatsServer
    from liftlog.embedded.node import NodeProcess
    from liftlog.embedded.ports import free_port
    from liftlog.embedded.process import ChildProcess
    from liftlog.embedded.standalone import Standalone
    from liftlog.embedded.zookeeper import ZooKeeperServer


def __getattr__(name: str) -> object:
    """Each name imported on first use (literal imports, which the import-rule test follows)."""
    if name == "ChildProcess":
        from liftlog.embedded.process import ChildProcess

        return ChildProcess
    if name == "NatsServer":
        from liftlog.embedded.nats import NatsServer

        return NatsServer
    if name == "NodeProcess":
        from liftlog.embedded.node import NodeProcess

        return NodeProcess
    if name == "Standalone":
        from liftlog.embedded.standalone import Standalone

        return Standalone
    if name == "ZooKeeperServer":
        from liftlog.embedded.zookeeper import ZooKeeperServer

        return ZooKeeperServer
    if name == "free_port":
        from liftlog.embedded.ports import free_port

        return free_port
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
