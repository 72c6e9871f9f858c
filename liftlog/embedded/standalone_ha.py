"""``liftlog standalone --ha``: the HA topology on one machine.

A 3-server NATS cluster (client ports ``--nats-port + i``) and a 3-server ZooKeeper ensemble
(client ports ``--zk-port + i``) instead of one of each. Node ``i`` is attached to NATS server
``i`` (first in its ``nats_servers``, the others after it, so it fails over to them) and is
given the whole ensemble as its ZooKeeper connect string: the same shape as the three-host
layout of docs/deployment.md, with hosts replaced by ports.

Layout under the stack's data directory: ``nats/server-<i>/`` and ``zookeeper/server-<i>/``
(each with its config file: nats-server.conf, zoo.cfg and data/myid), logs as
``logs/nats-<i>.log`` and ``logs/zookeeper-<i>.log``.
"""

from __future__ import annotations

from pathlib import Path

from liftlog.embedded.component import Component
from liftlog.embedded.nats_auth import NatsServerSecurity
from liftlog.embedded.nats_cluster import NatsCluster
from liftlog.embedded.port_check import (
    PORT_NATS,
    PORT_NATS_MONITOR,
    PORT_ZOOKEEPER,
    PlannedPort,
)
from liftlog.embedded.standalone_defaults import HA_CLUSTER_SIZE as HA_CLUSTER_SIZE
from liftlog.embedded.zookeeper_ensemble import ZooKeeperEnsemble
from liftlog.embedded.zookeeper_tls import ZkServerTls


class HaTopology:
    """The NATS cluster and the ZooKeeper ensemble of an HA standalone stack."""

    def __init__(
        self,
        data_dir: Path,
        host: str,
        nats_port: int,
        zk_port: int,
        *,
        nats_security: NatsServerSecurity | None = None,
        zk_tls: ZkServerTls | None = None,
    ) -> None:
        """``nats_security`` and ``zk_tls`` (``--secure``) apply to every server of the
        cluster and of the ensemble, routes and quorum traffic included."""
        logs = data_dir / "logs"
        self.nats = NatsCluster(
            data_dir / "nats",
            HA_CLUSTER_SIZE,
            host=host,
            client_port=nats_port,
            log_dir=logs,
            security=nats_security,
        )
        self.zookeeper = ZooKeeperEnsemble(
            data_dir / "zookeeper",
            HA_CLUSTER_SIZE,
            host=host,
            client_port=zk_port,
            log_dir=logs,
            tls=zk_tls,
        )

    def components(self) -> list[Component]:
        """Every server, NATS first (the order start and stop use)."""
        return [*self.nats.servers, *self.zookeeper.servers]

    def node_settings(self, broker_id: int) -> dict[str, object]:
        """Node ``broker_id``'s NATS servers (its own first) and ZooKeeper connect string."""
        own = (broker_id - 1) % len(self.nats.servers)
        return {
            "nats_servers": tuple(self.nats.urls_from(own)),
            "zk_connect": self.zookeeper.connect_string,
        }

    def planned_ports(self) -> list[PlannedPort]:
        """Client and monitor ports (route and quorum ports were found free at construction)."""
        planned = []
        for server in self.nats.servers:
            planned.append(PlannedPort(server.port, PORT_NATS, f"NATS {server.index + 1}"))
            planned.append(
                PlannedPort(
                    server.monitor_port, PORT_NATS_MONITOR, f"NATS {server.index + 1} monitor"
                )
            )
        planned += [
            PlannedPort(s.port, PORT_ZOOKEEPER, f"ZooKeeper {s.myid}")
            for s in self.zookeeper.servers
        ]
        return planned

    def endpoints(self) -> list[tuple[str, str]]:
        """One (name, address) per server, then the connect string clients are given."""
        found = [(f"nats-{s.index + 1}", s.url) for s in self.nats.servers]
        found += [(f"nats-{s.index + 1} monitor", s.monitor_url) for s in self.nats.servers]
        found += [(f"nats-{s.index + 1} route", s.route_url) for s in self.nats.servers]
        found += [(f"zookeeper-{s.myid}", s.connect_string) for s in self.zookeeper.servers]
        found.append(("zookeeper", self.zookeeper.connect_string))
        return found
