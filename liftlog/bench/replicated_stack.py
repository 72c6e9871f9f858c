"""The processes of the replicated run: Liftlog's embedded stack with three nodes (one
nats-server, ZooKeeper, three ingest nodes with the default fsync=always) and a three-server
JetStream cluster. Both stay up for the whole run so the per-message rounds can alternate;
everything is stopped on exit, by PID, whatever happened (the JetStream cluster first).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from liftlog.bench.js_cluster import JetStreamCluster
from liftlog.bench.progress import Progress
from liftlog.bench.replica_check import node_name
from liftlog.bench.results import NATS
from liftlog.bench.settings import REPLICATED_FACTOR
from liftlog.embedded.ports import free_port, free_port_block
from liftlog.embedded.standalone import Standalone


@dataclass
class ReplicatedStack:
    standalone: Standalone
    js_cluster: JetStreamCluster

    @property
    def api_urls(self) -> list[str]:
        """Every node's REST URL: the client may ask any of them."""
        return [node.api_url for node in self.standalone.nodes]

    @property
    def nats_url(self) -> str:
        return self.standalone.nats.url

    def node_pids(self) -> dict[str, int]:
        """``{"node-1": pid, ...}``: for the CPU meter and the peak RSS."""
        return {node_name(node.broker_id): node.pid for node in self.standalone.nodes}

    def pids(self) -> dict[str, int]:
        """Every process under test but the publisher: Liftlog's NATS, nodes, JS servers."""
        return {NATS: self.standalone.nats.pid, **self.node_pids(), **self.js_cluster.pids()}


@contextlib.contextmanager
def replicated_stack(root: Path, progress: Progress) -> Iterator[ReplicatedStack]:
    """Start both sides; yield; stop both (JetStream cluster first, then Liftlog's stack)."""
    standalone = Standalone(
        nodes=REPLICATED_FACTOR,
        data_dir=root / "stack",
        nats_port=free_port(),
        zk_port=free_port(),
        api_port=free_port_block(REPLICATED_FACTOR),
    )
    progress.say(
        f"starting NATS, ZooKeeper and {REPLICATED_FACTOR} Liftlog nodes (fsync=always) ..."
    )
    with standalone:
        for name, url in standalone.endpoints():
            progress.say(f"  {name:<14} {url}")
        # ports picked only now, just before the servers bind them: a free port picked before
        # the nodes started could have been taken by one of their connections meanwhile
        cluster = JetStreamCluster(root / "jetstream-r3")
        progress.say(
            f"starting a {len(cluster.servers)}-server JetStream cluster "
            "(file storage, default sync) ..."
        )
        with cluster:
            for server in cluster.servers:
                progress.say(f"  {server.server_name:<14} {server.url}")
            progress.say(f"  JetStream meta leader: {cluster.meta_leader}")
            yield ReplicatedStack(standalone, cluster)
