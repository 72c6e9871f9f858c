"""A ZooKeeper ensemble of real ZooKeeper server processes (``--ha``).

Every member runs the same jars as the single server, started as ``QuorumPeerMain`` (the
entry point that reads ``server.N`` lines; ``ZooKeeperServerMain`` ignores them), with a
``myid`` file and the same ``server.N=host:peerPort:electionPort`` lines in its zoo.cfg. A
member is ready when it answers ``ruok`` and ``srvr`` reports it as leader or follower: a
member that has not joined a quorum reports no mode (and refuses sessions), so "every member
ready" means the ensemble has elected a leader and serves clients on every member.

With ``tls`` every member's client port is a TLS port (see zookeeper_tls.py), and the
members speak TLS to each other too (``sslQuorum``, mutual: each presents the server
certificate, which must therefore also carry the clientAuth usage).
"""

from __future__ import annotations

from pathlib import Path
from typing import Self

from liftlog.embedded.lifecycle import StartStop
from liftlog.embedded.ports import free_port_block
from liftlog.embedded.process import DEFAULT_STOP_TIMEOUT_S
from liftlog.embedded.server_group import start_together, stop_together
from liftlog.embedded.zookeeper import DEFAULT_ZK_HOST, ZK_QUORUM_MAIN_CLASS, ZooKeeperServer
from liftlog.embedded.zookeeper_tls import ZkServerTls
from spark_log.errors import InvalidRequestError

DEFAULT_ZK_ENSEMBLE_SIZE = 3
# in ticks (DEFAULT_ZK_TICK_TIME_MS): how long a follower may take to connect to and sync
# with the leader at start-up, and how far it may lag afterwards
ZK_INIT_LIMIT_TICKS = 20
ZK_SYNC_LIMIT_TICKS = 10
QUORUM_MODES = ("Mode: leader", "Mode: follower")


class ZooKeeperEnsembleServer(ZooKeeperServer):
    """Member ``myid`` of an ensemble whose ``server.N`` lines are ``peers``."""

    main_class = ZK_QUORUM_MAIN_CLASS

    def __init__(
        self,
        myid: int,
        port: int,
        peers: dict[int, str],
        data_dir: Path,
        *,
        host: str = DEFAULT_ZK_HOST,
        log_path: Path | None = None,
        tls: ZkServerTls | None = None,
    ) -> None:
        super().__init__(port, data_dir, host, log_path=log_path, tls=tls)
        self.myid = myid
        self.peers = peers
        self.name = f"zookeeper {myid} :{port}"

    def is_ready(self) -> bool:
        """Serving clients as the leader or a follower of a quorum."""
        if self.four_letter_word("ruok") != "imok":
            return False
        return self.mode() in QUORUM_MODES

    def mode(self) -> str:
        """``Mode: leader`` / ``Mode: follower`` from ``srvr``; '' when not in a quorum."""
        reply = self.four_letter_word("srvr")
        return next((line for line in reply.splitlines() if line.startswith("Mode: ")), "")

    def _prepare(self) -> None:
        super()._prepare()
        (self.data_dir / "data" / "myid").write_text(f"{self.myid}\n")

    def _argv(self) -> list[str]:
        argv = super()._argv()
        if self.tls is None:
            return argv
        main = argv.index(self.main_class)  # JVM options go before the main class
        return [*argv[:main], *self.tls.quorum_jvm_properties(self.keystore_path), *argv[main:]]

    def _zoo_cfg(self) -> str:
        servers = [f"server.{n}={address}" for n, address in sorted(self.peers.items())]
        lines = [
            f"initLimit={ZK_INIT_LIMIT_TICKS}",
            f"syncLimit={ZK_SYNC_LIMIT_TICKS}",
            "reconfigEnabled=false",
            *(["sslQuorum=true"] if self.tls else []),
            *servers,
        ]
        return super()._zoo_cfg() + "\n".join(lines) + "\n"


class ZooKeeperEnsemble(StartStop):
    """``size`` members; client ports ``client_port + i`` when given, else free; with
    ``tls`` those are TLS-only ports."""

    def __init__(
        self,
        data_dir: str | Path,
        size: int = DEFAULT_ZK_ENSEMBLE_SIZE,
        *,
        host: str = DEFAULT_ZK_HOST,
        client_port: int | None = None,
        log_dir: str | Path | None = None,
        tls: ZkServerTls | None = None,
    ) -> None:
        if size < 1:
            raise InvalidRequestError(f"a ZooKeeper ensemble needs at least 1 server, got {size}")
        data_dir = Path(data_dir)
        first = client_port if client_port is not None else free_port_block(size, host)
        quorum = free_port_block(2 * size, host)  # peer port, election port per member
        peers = {i + 1: f"{host}:{quorum + 2 * i}:{quorum + 2 * i + 1}" for i in range(size)}
        self.servers = [
            ZooKeeperEnsembleServer(
                i + 1,
                first + i,
                peers,
                data_dir / f"server-{i + 1}",
                host=host,
                log_path=Path(log_dir) / f"zookeeper-{i + 1}.log" if log_dir else None,
                tls=tls,
            )
            for i in range(size)
        ]

    @property
    def connect_string(self) -> str:
        """Every member's client address: what a ZooKeeper client is given."""
        return ",".join(s.connect_string for s in self.servers)

    def leader(self) -> ZooKeeperEnsembleServer | None:
        """The member that reports itself leader now, if any."""
        return next((s for s in self.servers if s.mode() == "Mode: leader"), None)

    def start(self) -> Self:
        start_together(self.servers)
        return self

    def stop(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> None:
        stop_together(self.servers, timeout_s)
