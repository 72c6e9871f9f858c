"""A NATS cluster of real nats-server processes joined by cluster routes (``--ha``).

Each server has its own client, monitor and route port; every server lists the routes of all
the others, so the full mesh forms whichever starts first. A server counts as ready only once
its routes to every other member are up: before that, a message published on one server does
not reach a subscriber on another, which is exactly what the cluster is for.
"""

from __future__ import annotations

import dataclasses
import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Self

from liftlog.embedded.lifecycle import StartStop
from liftlog.embedded.nats import DEFAULT_NATS_HOST, NatsServer
from liftlog.embedded.nats_auth import NatsServerSecurity
from liftlog.embedded.ports import free_port_block
from liftlog.embedded.probes import PROBE_TIMEOUT_S
from liftlog.embedded.process import DEFAULT_STOP_TIMEOUT_S
from liftlog.embedded.server_group import start_together, stop_together
from spark_log.errors import InvalidRequestError

DEFAULT_NATS_CLUSTER_NAME = "liftlog"
DEFAULT_NATS_CLUSTER_SIZE = 3


class NatsClusterServer(NatsServer):
    """One member: the usual flags plus ``--cluster_name``, ``--cluster`` and ``--routes``."""

    def __init__(
        self,
        index: int,
        port: int,
        route_port: int,
        peer_route_ports: Sequence[int],
        data_dir: Path,
        *,
        host: str = DEFAULT_NATS_HOST,
        monitor_port: int,
        cluster_name: str = DEFAULT_NATS_CLUSTER_NAME,
        log_path: Path | None = None,
        security: NatsServerSecurity | None = None,
    ) -> None:
        super().__init__(
            port,
            data_dir,
            host=host,
            monitor_port=monitor_port,
            log_path=log_path,
            security=security,
        )
        self.index = index
        self.server_name = f"{cluster_name}-{index + 1}"
        self.name = f"nats-server {self.server_name} :{port}"
        self.cluster_name = cluster_name
        self.route_port = route_port
        self.routes = [self._route_url(p) for p in peer_route_ports]
        # None: peers learn the listen address. A fault test routing every link through its
        # own proxy sets an address of its choosing, so gossip cannot open a direct route.
        self.cluster_advertise: str | None = None

    @property
    def route_url(self) -> str:
        return self._route_url(self.route_port)

    def _route_url(self, port: int) -> str:
        return f"nats-route://{self.host}:{port}"

    def is_ready(self) -> bool:
        """Healthy and routed to every other member."""
        return super().is_ready() and self.route_count() >= len(self.routes)

    def route_count(self) -> int:
        """Routes this server has up now (``/routez``); 0 when it does not answer."""
        try:
            with urllib.request.urlopen(
                f"{self.monitor_url}/routez", timeout=PROBE_TIMEOUT_S
            ) as response:
                return int(json.load(response).get("num_routes", 0))
        except (urllib.error.URLError, OSError, ValueError):
            return 0

    def _config_text(self) -> str:
        """Cluster settings go in the config file, the way an operator would write them."""
        routes = "\n".join(f"    {r}" for r in self.routes)
        return super()._config_text() + (
            f"server_name: {self.server_name}\n"
            "cluster {\n"
            f"  name: {self.cluster_name}\n"
            f"  listen: {self.host}:{self.route_port}\n"
            + (f"  advertise: {self.cluster_advertise}\n" if self.cluster_advertise else "")
            + f"  routes: [\n{routes}\n  ]\n"
            + self._route_tls()
            + "}\n"
        )

    def _route_tls(self) -> str:
        """With TLS, routes use it too and each side demands the other's certificate: only a
        server holding a certificate of the cluster's CA can join and see the traffic."""
        tls = self.security.tls if self.security else None
        if tls is None:
            return ""
        block = dataclasses.replace(tls, verify=True).render()
        return "  tls " + block.replace("\n", "\n  ") + "\n"

    def _argv(self) -> list[str]:
        argv = super()._argv()
        at = argv.index("--server_name")
        return argv[:at] + argv[at + 2 :]  # the config file names the server


class NatsCluster(StartStop):
    """``size`` clustered servers; client ports ``client_port + i`` when given, else free."""

    def __init__(
        self,
        data_dir: str | Path,
        size: int = DEFAULT_NATS_CLUSTER_SIZE,
        *,
        host: str = DEFAULT_NATS_HOST,
        client_port: int | None = None,
        log_dir: str | Path | None = None,
        cluster_name: str = DEFAULT_NATS_CLUSTER_NAME,
        security: NatsServerSecurity | None = None,
    ) -> None:
        if size < 1:
            raise InvalidRequestError(f"a NATS cluster needs at least 1 server, got {size}")
        data_dir = Path(data_dir)
        first = client_port if client_port is not None else free_port_block(size, host)
        # monitor and route ports: one block below the ephemeral range (see ports.py)
        aux = free_port_block(2 * size, host)
        route_ports = [aux + size + i for i in range(size)]
        self.servers = [
            NatsClusterServer(
                i,
                first + i,
                route_ports[i],
                [p for j, p in enumerate(route_ports) if j != i],
                data_dir / f"server-{i + 1}",
                host=host,
                monitor_port=aux + i,
                cluster_name=cluster_name,
                log_path=Path(log_dir) / f"nats-{i + 1}.log" if log_dir else None,
                security=security,
            )
            for i in range(size)
        ]

    @property
    def urls(self) -> list[str]:
        """Every server's client URL, in member order."""
        return [s.url for s in self.servers]

    def urls_from(self, index: int) -> list[str]:
        """Every client URL with server ``index`` first: what a client attached to it lists."""
        urls = self.urls
        return [urls[index], *urls[:index], *urls[index + 1 :]]

    def start(self) -> Self:
        start_together(self.servers)
        return self

    def stop(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> None:
        stop_together(self.servers, timeout_s)
