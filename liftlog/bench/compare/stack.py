"""The processes under test: Liftlog's embedded stack (one nats-server, ZooKeeper, as many
nodes as the replication factor, each with the default fsync=always) and the line-up's
JetStream peer. Both stay up for the whole run so the per-message rounds can alternate;
everything is stopped on exit, by PID, whatever happened (the JetStream peer first).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from liftlog.bench.compare.lineup import Lineup
from liftlog.bench.compare.peers import PeerServer
from liftlog.bench.compare.sides import NATS, NODE
from liftlog.bench.publish.replica_check import node_name
from liftlog.bench.toolkit.progress import Progress
from liftlog.embedded.ports import free_port, free_port_block
from liftlog.embedded.standalone import Standalone


@dataclass
class BenchStack:
    standalone: Standalone
    peers: list[PeerServer]
    notes: list[str]

    @property
    def api_urls(self) -> list[str]:
        """Every node's REST URL: the client may ask any of them."""
        return [node.api_url for node in self.standalone.nodes]

    def node_pids(self) -> dict[str, int]:
        """``{"node": pid}`` for one node, ``{"node-1": pid, ...}`` for several: for the CPU
        meter and the peak RSS."""
        nodes = self.standalone.nodes
        if len(nodes) == 1:
            return {NODE: nodes[0].pid}
        return {node_name(node.broker_id): node.pid for node in nodes}

    def pids(self) -> dict[str, int]:
        """Every process under test but the publisher: Liftlog's NATS, nodes, JetStream's."""
        found = {NATS: self.standalone.nats.pid, **self.node_pids()}
        for peer in self.peers:
            found.update(peer.pids)
        return found

    def replica_names(self, liftlog_side: str) -> dict[str, list[str]]:
        """Each side's replica processes (the nodes for Liftlog), for the CPU figures."""
        names = {liftlog_side: list(self.node_pids())}
        names.update({peer.side: list(peer.replicas) for peer in self.peers if peer.replicas})
        return names


@contextlib.contextmanager
def bench_stack(root: Path, progress: Progress, lineup: Lineup) -> Iterator[BenchStack]:
    """Start both sides; yield; stop both (the JetStream peer first, then Liftlog's stack)."""
    nodes = lineup.replication_factor
    standalone = Standalone(
        nodes=nodes,
        data_dir=root / "stack",
        nats_port=free_port(),
        zk_port=free_port(),
        api_port=free_port_block(nodes),
        liftbridge_port=free_port_block(nodes),
        jetstream=lineup.peers.stack_jetstream,
    )
    what = "one Liftlog node" if nodes == 1 else f"{nodes} Liftlog nodes"
    jetstream = " (JetStream)" if lineup.peers.stack_jetstream else ""
    progress.say(f"starting NATS{jetstream}, ZooKeeper and {what} (fsync=always) ...")
    with standalone, contextlib.ExitStack() as cleanup:
        for name, url in standalone.endpoints():
            progress.say(f"  {name:<14} {url}")
        peers = lineup.peers.start(standalone, root, progress, cleanup)
        yield BenchStack(standalone, peers.servers, peers.notes)
