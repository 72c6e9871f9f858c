"""Start the real components (nats-server, ZooKeeper, ingest nodes) as child processes.

This is the embedded default behind ``liftlog standalone`` and the test fixtures: the real
binaries, started and stopped by PID, never mocks. The package uses the standard library only
(it must not import kazoo, pyspark or fastapi) so the core stays light.
"""

from __future__ import annotations

from spark_log.embedded.nats import NatsServer
from spark_log.embedded.node import NodeProcess
from spark_log.embedded.process import ChildProcess, free_port
from spark_log.embedded.standalone import Standalone
from spark_log.embedded.zookeeper import ZooKeeperServer

__all__ = [
    "ChildProcess",
    "NatsServer",
    "NodeProcess",
    "Standalone",
    "ZooKeeperServer",
    "free_port",
]
