"""Start the real components (nats-server, ZooKeeper, ingest nodes) as child processes.

This is the embedded default behind ``liftlog standalone`` and the test fixtures: the real
binaries, started and stopped by PID, never mocks. The package uses the standard library only
(it must not import kazoo, pyspark or fastapi) so the core stays light.
"""

from __future__ import annotations

from liftlog.embedded.nats import NatsServer
from liftlog.embedded.node import NodeProcess
from liftlog.embedded.ports import free_port
from liftlog.embedded.process import ChildProcess
from liftlog.embedded.standalone import Standalone
from liftlog.embedded.zookeeper import ZooKeeperServer

__all__ = [
    "ChildProcess",
    "NatsServer",
    "NodeProcess",
    "Standalone",
    "ZooKeeperServer",
    "free_port",
]
