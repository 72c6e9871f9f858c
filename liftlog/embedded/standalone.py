"""``liftlog standalone``: NATS, ZooKeeper and N ingest nodes on one machine.

Layout under ``data_dir`` (restarting on the same directory keeps everything, ZooKeeper's
znodes and sessions included)::

    nats/            NATS data (JetStream store when enabled)
    zookeeper/       zoo.cfg and ZooKeeper's snapshots and transaction logs
    node-<i>/        node i's partition logs
    lake/            the Delta lake all nodes export to (one table per stream incarnation)
    seaweedfs/       with ``lake="s3"``: the embedded S3 server's store; the lake is then
                     ``s3://liftlog/lake`` on it instead of ``lake/``
    config/node-<i>.toml
    credentials.toml with ``secure`` or ``lake="s3"``: the server URL, the admin token and
                     CA, the S3 lake's keys, for the tools (client_files.py); ``lake.env``
                     the S3 lake's ``AWS_*`` variables
    logs/            nats.log, zookeeper.log, node-<i>.log
    .lock            locked while any process of the stack lives (see data_dir_lock.py)
With ``ha=True`` (``--ha``) NATS and ZooKeeper are three servers each (see standalone_ha.py)
and the lake is on the embedded SeaweedFS. With ``secure=True`` (``--secure``) everything is
secured and ``tls/`` and ``credentials.toml`` hold the keys (see standalone_secure.py).
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, Self

from liftlog.embedded.client_files import CREDENTIALS_FILE_NAME, LAKE_ENV_FILE_NAME, ClientFiles
from liftlog.embedded.component import Component
from liftlog.embedded.data_dir_lock import DataDirLock
from liftlog.embedded.lifecycle import StartStop
from liftlog.embedded.nats import DEFAULT_NATS_HOST, NatsServer
from liftlog.embedded.node import NodeProcess
from liftlog.embedded.port_check import (
    PORT_NATS,
    PORT_NATS_MONITOR,
    PORT_NODE_API,
    PORT_NODE_LIFTBRIDGE,
    PORT_ZOOKEEPER,
    PlannedPort,
    PortInUseError,
    busy_ports,
)
from liftlog.embedded.ports import free_port, free_port_block
from liftlog.embedded.ports import reserve as reserve_ports
from liftlog.embedded.process import DEFAULT_STOP_TIMEOUT_S
from liftlog.embedded.restarts import ComponentRestarter
from liftlog.embedded.seaweedfs import SeaweedFsServer
from liftlog.embedded.standalone_defaults import (
    DEFAULT_STANDALONE_API_PORT,
    DEFAULT_STANDALONE_DATA_DIR,
    DEFAULT_STANDALONE_LIFTBRIDGE_PORT,
    DEFAULT_STANDALONE_NATS_PORT,
    DEFAULT_STANDALONE_NODES,
    DEFAULT_STANDALONE_ZK_PORT,
)
from liftlog.embedded.standalone_ha import HA_CLUSTER_SIZE, HaTopology
from liftlog.embedded.standalone_lake import (
    LAKE_LOCAL,
    LAKE_S3,
    create_lake_bucket,
    kept_s3_secret,
    s3_lake_config,
)
from liftlog.embedded.standalone_secure import SecureStack
from liftlog.embedded.zookeeper import ZooKeeperServer, node_zk_security, secure_zookeeper
from spark_log.auth_config import AuthConfig
from spark_log.config import LAKE_DIR_NAME, LakeConfig, NodeConfig
from spark_log.errors import InvalidRequestError, ProcessStartError
from spark_log.typed_config import from_mapping, to_mapping

# How often run_forever looks at its children (a restart backoff is as precise as this).
RUN_FOREVER_POLL_INTERVAL_S = 0.25


def _quiet(_line: str) -> None:
    """The default reporter: a library stack says nothing."""


class Standalone(StartStop):
    """The embedded deployment; a context manager that starts on enter and stops on exit."""

    def __init__(
        self,
        nodes: int = DEFAULT_STANDALONE_NODES,
        data_dir: str | Path = DEFAULT_STANDALONE_DATA_DIR,
        nats_port: int = DEFAULT_STANDALONE_NATS_PORT,
        zk_port: int = DEFAULT_STANDALONE_ZK_PORT,
        api_port: int = DEFAULT_STANDALONE_API_PORT,
        node_overrides: Mapping[str, Any] | None = None,
        *,
        host: str = DEFAULT_NATS_HOST,
        jetstream: bool = False,
        nats_monitor_port: int | None = None,
        report: Callable[[str], None] = _quiet,
        lake: str = LAKE_LOCAL,
        ha: bool = False,
        secure: bool = False,
        liftbridge_port: int = DEFAULT_STANDALONE_LIFTBRIDGE_PORT,
    ) -> None:
        if nodes < 0:
            raise InvalidRequestError(f"nodes must be >= 0, got {nodes}")
        if lake not in (LAKE_LOCAL, LAKE_S3):
            raise InvalidRequestError(f"lake must be {LAKE_LOCAL!r} or {LAKE_S3!r}, got {lake!r}")
        # the ports asked for are the stack's before it picks any other (an HA topology's
        # NATS and ZooKeeper blocks, SeaweedFS's): the servers bind them only later
        reserve_ports(range(nats_port, nats_port + HA_CLUSTER_SIZE))
        reserve_ports(range(zk_port, zk_port + HA_CLUSTER_SIZE))
        reserve_ports(range(api_port, api_port + max(nodes, 1)))
        if liftbridge_port:
            reserve_ports(range(liftbridge_port, liftbridge_port + max(nodes, 1)))
        # the first node's Liftbridge gRPC port; node i uses this + i - 1 (0: none)
        self.liftbridge_port = liftbridge_port
        # absolute: the node config files must not depend on the directory a node starts in
        self.data_dir = Path(os.path.abspath(data_dir))
        self.host = host
        self.report = report
        self._owned_dir = False  # set by local(): a temporary directory stop() removes
        self._lock = DataDirLock(self.data_dir)
        logs = self.data_dir / "logs"
        # --secure: certificates, the admin token and the client credentials file under
        # data_dir, then TLS and users for NATS, TLS and a digest ACL for ZooKeeper
        # (not on a directory a running stack holds: it would rewrite the files it uses)
        if secure:
            self._lock.check_free()
        self.secure = (
            SecureStack.prepare(self.data_dir, list(range(1, nodes + 1))) if secure else None
        )
        secure_nats = self.secure.secure_nats() if self.secure else None
        self._nats_node_credentials = secure_nats.node if secure_nats else None
        # --ha: a NATS cluster and a ZooKeeper ensemble, and the lake on S3 (as in production)
        self.ha = (
            HaTopology(
                self.data_dir,
                host,
                nats_port,
                zk_port,
                nats_security=secure_nats.security if secure_nats else None,
                zk_tls=self.secure.zookeeper_server_tls() if self.secure else None,
            )
            if ha
            else None
        )
        lake = LAKE_S3 if ha else lake
        self.nats = (
            self.ha.nats.servers[0]
            if self.ha
            else NatsServer(
                nats_port,
                self.data_dir / "nats",
                jetstream,
                host,
                monitor_port=nats_monitor_port,
                log_path=logs / "nats.log",
                security=secure_nats.security if secure_nats else None,
            )
        )
        self.zookeeper: ZooKeeperServer
        if self.ha:
            self.zookeeper = self.ha.zookeeper.servers[0]
        elif self.secure:
            zk_cert = self.secure.certs.zookeeper
            self.zookeeper = secure_zookeeper(
                zk_port,
                self.data_dir / "zookeeper",
                cert_file=zk_cert.cert_file,
                key_file=zk_cert.key_file,
                ca_file=self.secure.certs.ca_file,
                host=host,
                log_path=logs / "zookeeper.log",
            )
        else:
            self.zookeeper = ZooKeeperServer(
                zk_port, self.data_dir / "zookeeper", host, log_path=logs / "zookeeper.log"
            )
        self.seaweedfs = (
            SeaweedFsServer(
                self.data_dir / "seaweedfs",
                host=host,
                secret_access_key=kept_s3_secret(self.data_dir / "seaweedfs"),
                log_path=logs / "seaweedfs.log",
            )
            if lake == LAKE_S3
            else None
        )
        self.nodes = [
            self._node_process(i, host, api_port + i - 1, node_overrides or {})
            for i in range(1, nodes + 1)
        ]

    def _node_process(
        self, broker_id: int, host: str, api_port: int, overrides: Mapping[str, Any]
    ) -> NodeProcess:
        base = NodeConfig(
            broker_id=broker_id,
            data_dir=str(self.data_dir / f"node-{broker_id}"),
            api_host=host,
            api_port=api_port,
            liftbridge_port=self.liftbridge_port + broker_id - 1 if self.liftbridge_port else 0,
            **self._nats_and_zookeeper(broker_id),
            lake=self._lake_config(),  # shared by every node
            **self._security_settings(broker_id),
        )
        config = from_mapping(NodeConfig, _merge(to_mapping(base), overrides), "node_overrides")
        return NodeProcess(
            config,
            self.data_dir / "config" / f"node-{broker_id}.toml",
            log_path=self.data_dir / "logs" / f"node-{broker_id}.log",
        )

    def _nats_and_zookeeper(self, broker_id: int) -> dict[str, Any]:
        """Where node ``broker_id`` finds NATS and ZooKeeper (all servers with --ha)."""
        if self.ha is not None:
            return self.ha.node_settings(broker_id)
        return {"nats_url": self.nats.url, "zk_connect": self.zookeeper.connect_string}

    def _security_settings(self, broker_id: int) -> dict[str, Any]:
        """With ``secure``: HTTPS and auth, the node's NATS user and its ZooKeeper TLS and
        digest identity (the node's own certificate as client certificate)."""
        if self.secure is None:
            # the development stack checks no credentials, said explicitly (auth is on by
            # default); a --config file may still turn it on
            return {"auth": AuthConfig(enabled=False)}
        settings = self.secure.node_settings(broker_id)
        if self._nats_node_credentials is not None:
            settings["nats"] = self._nats_node_credentials
        if self.zookeeper.tls is not None:
            own = self.secure.certs.nodes[broker_id]
            settings["zk_security"] = node_zk_security(
                self.secure.tls_dir, self.secure.certs.ca_file, own.cert_file, own.key_file
            )
        return settings

    def _lake_config(self) -> LakeConfig:
        if self.seaweedfs is not None:
            return s3_lake_config(self.seaweedfs.credentials)
        return LakeConfig(uri=str(self.data_dir / LAKE_DIR_NAME))

    @property
    def _core(self) -> list[Component]:
        """What the nodes need running: NATS, ZooKeeper and, for an S3 lake, SeaweedFS."""
        core: list[Component] = self.ha.components() if self.ha else [self.nats, self.zookeeper]
        return core if self.seaweedfs is None else [*core, self.seaweedfs]

    @classmethod
    def local(cls, nodes: int = 1, data_dir: str | Path | None = None) -> Self:
        """A stack on free ports, in ``data_dir`` or a temporary directory removed by
        ``stop()``: what a notebook or a script starts when it has no cluster to connect to.
        Not started yet: call ``start()`` or use it in a ``with`` block."""
        owned = data_dir is None
        root = Path(tempfile.mkdtemp(prefix="liftlog-")) if data_dir is None else Path(data_dir)
        stack = cls(
            nodes=nodes,
            data_dir=root,
            nats_port=free_port(),
            zk_port=free_port(),
            api_port=free_port_block(max(nodes, 1)),
            liftbridge_port=free_port_block(max(nodes, 1)),
        )
        stack._owned_dir = owned
        return stack

    @property
    def servers(self) -> str:
        """The nodes' REST URLs, comma-separated: the ``servers`` of the client, the CLI and
        ``spark.read.format("liftlog")``."""
        return ",".join(node.api_url for node in self.nodes)

    def planned_ports(self) -> list[PlannedPort]:
        """Every port the stack will listen on, with what listens there."""
        planned = (
            self.ha.planned_ports()
            if self.ha
            else [
                PlannedPort(self.nats.port, PORT_NATS, "NATS"),
                PlannedPort(self.nats.monitor_port, PORT_NATS_MONITOR, "NATS monitor"),
                PlannedPort(self.zookeeper.port, PORT_ZOOKEEPER, "ZooKeeper"),
            ]
        )
        planned += [
            PlannedPort(n.config.api_port, PORT_NODE_API, f"node {n.broker_id} API")
            for n in self.nodes
        ]
        planned += [
            PlannedPort(n.config.liftbridge_port, PORT_NODE_LIFTBRIDGE, f"node {n.broker_id} gRPC")
            for n in self.nodes
            if n.config.liftbridge_port
        ]
        return planned

    def check_ports(self) -> None:
        """PortInUseError naming every planned port that is taken (nothing is started)."""
        busy = busy_ports(self.host, self.planned_ports())
        if busy:
            raise PortInUseError(busy, self.host)

    def check_data_dir_free(self) -> None:
        """DataDirInUseError if another stack, or a process left from one, holds the data
        directory (nothing is created)."""
        self._lock.check_free()

    def _lock_data_dir(self) -> None:
        """Lock the data directory and have every process started from now on inherit the
        lock, so that it is held until the last process of the stack is gone."""
        self._lock.acquire()
        self._share_lock()

    def _share_lock(self) -> None:
        """Every component inherits the lock's descriptor while it is held (and none after
        ``stop`` closed it: the number could then name an unrelated file)."""
        inherited = (self._lock.fd,) if self._lock.fd is not None else ()
        for component in [*self._core, *self.nodes]:
            component.inherited_fds = inherited

    def start(self) -> Self:
        """Check the data directory is free and every port too, lock the directory, then
        start NATS and ZooKeeper in parallel, then the nodes; every one waited ready.

        If anything fails to start, whatever did start is stopped before the error propagates.
        """
        self.check_data_dir_free()
        self.check_ports()
        self._lock_data_dir()
        self._write_client_files()
        try:
            _start_together(self._core)
            if self.seaweedfs is not None:
                create_lake_bucket(self.seaweedfs.credentials)
            _start_together(self.nodes)
        except BaseException:  # Ctrl-C and unexpected errors too: nothing, the lock's fd
            self.stop()  # included, outlives a failed start
            raise
        return self

    def stop(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> None:
        """Nodes first (they deregister and flush while ZooKeeper and NATS are still up);
        each stopped process is reported with its PID."""
        for group in (self.nodes, self._core[::-1]):
            running = [c for c in group if c.is_running()]
            _stop_together(group, timeout_s)
            for component in running:
                self.report(f"stopped {component.name} (pid {component.pid})")
        self._lock.release()
        self._share_lock()
        if self._owned_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def node(self, i: int) -> NodeProcess:
        """Node ``i`` (1-based, equal to its broker id)."""
        if not 1 <= i <= len(self.nodes):
            raise InvalidRequestError(f"no node {i}: this standalone has {len(self.nodes)}")
        return self.nodes[i - 1]

    def endpoints(self) -> list[tuple[str, str]]:
        """(name, address) of every component, in the order a user needs them."""
        found = (
            self.ha.endpoints()
            if self.ha
            else [
                ("nats", self.nats.url),
                ("nats monitor", self.nats.monitor_url),
                ("zookeeper", self.zookeeper.connect_string),
            ]
        )
        if self.seaweedfs is not None:
            found.append(("s3", self.seaweedfs.endpoint_url))
            found.append(("lake", self.nodes[0].config.lake.uri if self.nodes else ""))
        found += [(f"node-{n.broker_id} api", n.api_url) for n in self.nodes]
        found += [
            (f"node-{n.broker_id} grpc", n.config.advertised_liftbridge_address)
            for n in self.nodes
            if n.config.liftbridge_port
        ]
        return found

    def credential_lines(self) -> list[tuple[str, str]]:
        """With ``secure``: the admin token, the credentials file, the CA and the admin's
        client certificate; with an S3 lake its keys, the credentials file and ``lake.env``
        (the CLI prints them once, at start); empty otherwise."""
        lines = self.secure.client_lines() if self.secure else []
        if self.seaweedfs is None:
            return lines
        s3 = self.seaweedfs.credentials
        lines += [("s3 access key", s3.access_key_id), ("s3 secret key", s3.secret_access_key)]
        if self.secure is None:
            lines.append(("credentials", str(self.data_dir / CREDENTIALS_FILE_NAME)))
        return [*lines, ("lake env", str(self.data_dir / LAKE_ENV_FILE_NAME))]

    def _write_client_files(self) -> None:
        """``credentials.toml`` and ``lake.env`` for the tools (client_files.py), when the
        stack has credentials to give: ``secure`` or an S3 lake."""
        if self.secure is None and self.seaweedfs is None:
            return
        ClientFiles(
            server=self.servers,
            token=self.secure.admin_token if self.secure else "",
            ca_file=self.secure.certs.ca_file if self.secure else "",
            lake=self.seaweedfs.credentials if self.seaweedfs else None,
        ).write(self.data_dir)

    def run_forever(self, on_ready: Callable[[], None] = lambda: None) -> None:
        """Block until SIGINT/SIGTERM, then stop everything (the CLI's foreground mode).

        ``on_ready`` is called once both signals are handled: a "ready" announced there
        promises that a stop request from then on stops everything cleanly (announced before,
        a SIGTERM in between would kill the launcher with its default action).

        A node that exits is restarted with exponential backoff (``restarts``), each restart
        reported. With ``ha`` so is a NATS server, a ZooKeeper server or SeaweedFS: two of
        three servers keep the cluster and the ensemble working while the third comes back.
        Without ``ha`` there is one NATS server and one ZooKeeper server and the nodes cannot
        work without them, so if either (or SeaweedFS) exits, everything is stopped and this
        returns.
        """
        if threading.current_thread() is not threading.main_thread():
            raise ProcessStartError("run_forever must be called from the main thread")
        signalled = threading.Event()

        def on_signal(signum: int, _frame: FrameType | None) -> None:
            signalled.set()

        previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            on_ready()
            self._watch_until(signalled)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            self.stop()

    def restarted_components(self) -> list[Component]:
        """What ``run_forever`` restarts when it exits: every node, and with ``ha`` every
        server of the core as well (the order of ``_core`` then the nodes)."""
        restarted: list[Component] = list(self._core) if self.ha else []
        return [*restarted, *self.nodes]

    def _fatal_exit(self) -> Component | None:
        """A core component whose exit ends the stack (only without ``ha``), if one exited."""
        if self.ha:
            return None
        return next((core for core in self._core if not core.is_running()), None)

    def _watch_until(self, signalled: threading.Event) -> None:
        restarters = [ComponentRestarter(c, self.report) for c in self.restarted_components()]
        while not signalled.wait(RUN_FOREVER_POLL_INTERVAL_S):
            exited = self._fatal_exit()
            if exited is not None:
                print(f"{exited.name} exited; stopping everything", file=sys.stderr)
                return
            for restarter in restarters:
                restarter.check()


def _start_together(components: Sequence[Component]) -> None:
    """Spawn all, then wait for each: start-up time is the slowest one's, not the sum."""
    for component in components:
        component.spawn()
    for component in components:
        component.wait_ready()


def _stop_together(components: Sequence[Component], timeout_s: float) -> None:
    """SIGTERM all first so they shut down in parallel, then wait for (or kill) each."""
    for component in components:
        if component.is_running():
            component.process.terminate()
    for component in components:
        component.stop(timeout_s)


def _merge(base: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Overrides win; nested tables (``log``, ``ingest``) merge key by key."""
    merged = dict(base)
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = to_mapping(value) if _is_dataclass_instance(value) else value
    return merged


def _is_dataclass_instance(value: Any) -> bool:
    return hasattr(value, "__dataclass_fields__") and not isinstance(value, type)
