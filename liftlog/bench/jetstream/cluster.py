"""JetStream R3: a three-server NATS cluster from the same nats-server binary, started by the
benchmark itself, so Liftlog RF=3 is compared with JetStream's own replication on one machine.

Each server runs JetStream with its own store directory, the same cluster name, its own route
port and routes to the other two. A clustered JetStream accepts no stream until the servers
have elected a meta leader, so start-up waits for one (``/jsz``) before anything is created.
Every server is stopped on exit, by PID, whatever happened.

The nine ports (client, monitor and route for each server) are one block below the kernel's
ephemeral range: the servers dial each other's routes while the others start, and such an
outgoing connection could otherwise take a port between the check and its server's bind.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from liftlog.bench.errors import BenchError
from liftlog.bench.toolkit.json_object import JsonObject
from liftlog.embedded.lifecycle import StartStop
from liftlog.embedded.nats import DEFAULT_NATS_HOST, NatsServer
from liftlog.embedded.ports import free_port_block
from liftlog.embedded.process import DEFAULT_STOP_TIMEOUT_S
from spark_log.errors import LiftlogError

CLUSTER_NAME = "liftlog-bench-r3"
CLUSTER_SIZE = 3
PORTS_PER_SERVER = 3
META_LEADER_TIMEOUT_S = 30.0
META_POLL_INTERVAL_S = 0.1
JSZ_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class ClusterPorts:
    """Three consecutive ports per server from one free block: client, monitor, route."""

    base: int
    size: int

    @classmethod
    def allocate(cls, size: int) -> ClusterPorts:
        return cls(free_port_block(PORTS_PER_SERVER * size), size)

    def client(self, index: int) -> int:
        return self.base + PORTS_PER_SERVER * index

    def monitor(self, index: int) -> int:
        return self.client(index) + 1

    def route(self, index: int) -> int:
        return self.client(index) + 2


class ClusterNatsServer(NatsServer):
    """One member of the cluster: the usual flags plus ``--cluster``, ``--routes`` and a name.

    Its readiness probe (``/healthz``) only answers 200 once JetStream has contact with a meta
    leader, so the members must be spawned together and then waited for.
    """

    def __init__(self, index: int, ports: ClusterPorts, data_dir: Path) -> None:
        super().__init__(
            ports.client(index),
            data_dir,
            jetstream=True,
            monitor_port=ports.monitor(index),
            log_path=data_dir / "nats-server.log",
        )
        self.server_name = f"bench-r3-{index + 1}"
        self.name = f"nats-server {self.server_name} :{self.port}"
        self.route_port = ports.route(index)
        self.routes = [_route_url(ports.route(i)) for i in range(ports.size) if i != index]

    def _argv(self) -> list[str]:
        argv = _replace_option(super()._argv(), "--server_name", self.server_name)
        return [
            *argv,
            "--cluster_name",
            CLUSTER_NAME,
            "--cluster",
            _route_url(self.route_port),
            "--routes",
            ",".join(self.routes),
        ]


class JetStreamCluster(StartStop):
    """Three clustered JetStream servers; a context manager that starts and stops them all."""

    def __init__(self, data_dir: Path, size: int = CLUSTER_SIZE) -> None:
        ports = ClusterPorts.allocate(size)
        self.servers = [
            ClusterNatsServer(i, ports, data_dir / f"server-{i + 1}") for i in range(size)
        ]
        self.meta_leader: str | None = None

    @property
    def url(self) -> str:
        """The server publishers connect to (the first; the stream leader may be another)."""
        return self.servers[0].url

    @property
    def monitor_url(self) -> str:
        return self.servers[0].monitor_url

    def start(self) -> Self:
        """Spawn every server, wait for each to be healthy and for a meta leader; on any
        failure stop whatever started before the error propagates."""
        try:
            for server in self.servers:
                server.spawn()
            for server in self.servers:
                server.wait_ready()
            self.meta_leader = wait_for_meta_leader([s.monitor_url for s in self.servers])
        except LiftlogError:
            self.stop()
            raise
        return self

    def stop(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> None:
        """SIGTERM every server first (they shut down in parallel), then wait or SIGKILL."""
        for server in self.servers:
            if server.is_running():
                server.process.terminate()
        for server in self.servers:
            server.stop(timeout_s)

    def pids(self) -> dict[str, int]:
        """``{server name: pid}``, for the CPU meter."""
        return {s.server_name: s.pid for s in self.servers}


def wait_for_meta_leader(
    monitor_urls: Sequence[str], timeout_s: float = META_LEADER_TIMEOUT_S
) -> str:
    """Poll every server's ``/jsz`` until all name the same meta leader; returns its name.

    Creating a stream before that fails (or times out) with "JetStream not ready", and a
    server that has not yet learnt the leader would forward nothing.
    """
    deadline = time.monotonic() + timeout_s
    leaders: list[str | None] = []
    while time.monotonic() < deadline:
        leaders = [_meta_leader(url) for url in monitor_urls]
        if leaders[0] and all(leader == leaders[0] for leader in leaders):
            return leaders[0]
        time.sleep(META_POLL_INTERVAL_S)
    raise BenchError(
        f"JetStream cluster elected no meta leader within {timeout_s:.0f}s "
        f"(each server's view: {leaders})"
    )


def _meta_leader(monitor_url: str) -> str | None:
    """The meta leader this server knows of, or None (not yet, or no answer)."""
    body = _jsz(monitor_url)
    meta = body.get("meta_cluster") if body else None
    leader = meta.get("leader") if isinstance(meta, dict) else None
    return str(leader) if leader else None


def _jsz(monitor_url: str) -> JsonObject | None:
    try:
        with urllib.request.urlopen(f"{monitor_url}/jsz", timeout=JSZ_TIMEOUT_S) as resp:
            return dict(json.loads(resp.read()))
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _route_url(port: int) -> str:
    return f"nats://{DEFAULT_NATS_HOST}:{port}"


def _replace_option(argv: list[str], flag: str, value: str) -> list[str]:
    """``argv`` with the value after ``flag`` replaced (appended when the flag is absent)."""
    if flag not in argv:
        return [*argv, flag, value]
    at = argv.index(flag)
    return [*argv[: at + 1], value, *argv[at + 2 :]]
