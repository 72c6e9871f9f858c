"""The JetStream peer of a line-up, started beside Liftlog's stack and stopped before it.

One node is compared with JetStream on the stack's own nats-server (default sync) and, when it
starts and confirms the setting, a second nats-server fsyncing every message; three nodes with
a three-server JetStream cluster. Both peers answer the same question (where do publishers
connect, which processes does the side add), so the stack and the runner treat them alike.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Protocol

from liftlog.bench.compare.sides import NATS_SYNC, Side
from liftlog.bench.jetstream.cluster import JetStreamCluster
from liftlog.bench.jetstream.server import SyncAlwaysNatsServer, syncs_always
from liftlog.bench.toolkit.progress import Progress
from liftlog.embedded.standalone import Standalone
from spark_log.errors import LiftlogError

CLUSTER_NOTE = (
    "JetStream publishers connect to one server of the cluster "
    "(the stream leader may be another); Liftlog publishes through its one "
    "nats-server to the partition leader"
)


@dataclass(frozen=True)
class PeerServer:
    """Where one JetStream side's publishers connect, and the processes the side adds."""

    side: str
    url: str
    pids: dict[str, int] = field(default_factory=dict)
    # The side's replica processes, for its CPU figure (none: JetStream runs in its NATS).
    replicas: tuple[str, ...] = ()


@dataclass(frozen=True)
class Peers:
    """Every JetStream server that started, and why a column is missing, if one is."""

    servers: list[PeerServer]
    notes: list[str]


class PeerStart(Protocol):
    """Starts a line-up's JetStream peer once the stack runs; ``cleanup`` stops it."""

    @property
    def stack_jetstream(self) -> bool:
        """Whether the stack's own nats-server runs JetStream (the single-node peer's does)."""
        ...

    def start(
        self,
        standalone: Standalone,
        root: Path,
        progress: Progress,
        cleanup: contextlib.ExitStack,
    ) -> Peers: ...


@dataclass(frozen=True)
class SingleServerPeers:
    """JetStream on the stack's nats-server, plus the optional sync=always column."""

    default: Side
    sync_always: Side
    stack_jetstream: ClassVar[bool] = True

    def start(
        self,
        standalone: Standalone,
        root: Path,
        progress: Progress,
        cleanup: contextlib.ExitStack,
    ) -> Peers:
        servers = [PeerServer(self.default.key, standalone.nats.url)]
        sync_server, notes = _start_sync_server(root / "nats-sync-always", progress)
        if sync_server is not None:
            cleanup.callback(sync_server.stop)
            servers.append(
                PeerServer(self.sync_always.key, sync_server.url, {NATS_SYNC: sync_server.pid})
            )
        return Peers(servers, notes)


@dataclass(frozen=True)
class ClusterPeers:
    """A three-server JetStream cluster whose servers are the side's replicas."""

    side: Side
    stack_jetstream: ClassVar[bool] = False

    def start(
        self,
        standalone: Standalone,
        root: Path,
        progress: Progress,
        cleanup: contextlib.ExitStack,
    ) -> Peers:
        # ports picked only now, just before the servers bind them: a free port picked before
        # the nodes started could have been taken by one of their connections meanwhile
        cluster = JetStreamCluster(root / "jetstream-r3")
        progress.say(
            f"starting a {len(cluster.servers)}-server JetStream cluster "
            "(file storage, default sync) ..."
        )
        cleanup.enter_context(cluster)
        for server in cluster.servers:
            progress.say(f"  {server.server_name:<14} {server.url}")
        progress.say(f"  JetStream meta leader: {cluster.meta_leader}")
        pids = cluster.pids()
        return Peers([PeerServer(self.side.key, cluster.url, pids, tuple(pids))], [CLUSTER_NOTE])


def _start_sync_server(
    data_dir: Path, progress: Progress
) -> tuple[SyncAlwaysNatsServer | None, list[str]]:
    """The optional third column: dropped, with the reason noted, if it cannot be had."""
    server = SyncAlwaysNatsServer(data_dir)
    progress.say("starting a second nats-server with JetStream sync_interval: always ...")
    try:
        server.start()
        confirmed = syncs_always(server.monitor_url)
    except LiftlogError as exc:
        server.stop()
        return None, [f"JetStream sync=always column dropped: {exc}"]
    if not confirmed:
        server.stop()
        return None, ["JetStream sync=always column dropped: /varz did not report sync_always"]
    progress.say(f"  {'nats sync=always':<14} {server.url} (varz: sync_always=true)")
    return server, []
