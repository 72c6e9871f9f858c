"""The HA stack with every inter-server link behind its own ``LinkProxy``: the fault topology.

``Standalone(ha=True)`` (3 NATS servers, a 3-server ZooKeeper ensemble, SeaweedFS, 3 nodes)
with two kinds of links rerouted before anything starts:

- NATS routes: server i's route to server j dials ``nats_route(i, j)``, one proxy per directed
  pair (both sides dial; whichever connection survives runs through one of the pair's two
  proxies, so cutting both directions cuts the link). Every server advertises a sink proxy that
  resets every connection, so route gossip can never open a direct, unproxied route.
- Node ↔ ZooKeeper: node b's connect string lists ``zk_link(b, z)`` for every server z, one
  proxy per (node, ZooKeeper server) pair.

Not proxied: a node's client link to its own NATS server (and to the others it fails over to),
publishers' and the test's links, the ZooKeeper quorum links between ZooKeeper servers and the
lake (SeaweedFS). Hosts are modelled as in docs/deployment.md: node b, NATS server b and
ZooKeeper server b share "host" b, so ``partition`` cuts routes and node↔ZooKeeper links
between groups (the ensemble itself stays whole). Nodes, NATS servers and ZooKeeper servers are
numbered 1..3.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import shutil
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, Self, TypeVar

import httpx
import pytest

from liftlog.embedded.nats_cluster import NatsClusterServer
from liftlog.embedded.node import NodeProcess
from liftlog.embedded.ports import free_port_block
from liftlog.embedded.standalone import Standalone
from liftlog.embedded.standalone_ha import HaTopology
from liftlog.embedded.zookeeper_ensemble import ZooKeeperEnsembleServer
from spark_log.errors import InvalidRequestError, LiftlogError
from tests.support.jepsen.disk_faults import DiskFault, lose_unsynced_tail
from tests.support.jepsen.full_disk import FILLER_NAME, TmpfsMount, fill_disk, free_disk
from tests.support.jepsen.proxy import LinkProxy

T = TypeVar("T")

CLUSTER_SIZE = 3
REST_TIMEOUT_S = 3.0
# unsafe: a single replica acknowledges and nothing is fsynced (see ``JepsenCluster``)
UNSAFE_NODE_OVERRIDES: dict[str, Any] = {"log": {"fsync": "never"}}
UNSAFE_MIN_ISR = 1


class ClusterError(LiftlogError):
    """A cluster lookup found no answer (no live node, no such stream or partition)."""


class JepsenCluster:
    """The proxied HA stack, in ``data_dir``; ``start()`` it, and ``stop()`` whatever happens.

    ``unsafe``: nodes run ``fsync = "never"`` and ``create_stream`` sets ``min_isr = 1``, so
    one replica acknowledges ``acks=all`` alone. Unclean leader election is not a setting in
    Liftlog but an operator action: ``elect_unclean`` performs it (the unsafe scenarios call
    it when a partition is offline). ``node_overrides`` are merged over those (a test's
    shorter ``replica_lag_time_max_s`` or ``zk_session_timeout_s``, say).
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        unsafe: bool = False,
        node_overrides: Mapping[str, Any] | None = None,
        seed: int = 0,
        small_disks: Mapping[int, int] | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.unsafe = unsafe
        self.random = random.Random(seed)
        overrides = _merge(UNSAFE_NODE_OVERRIDES if unsafe else {}, node_overrides or {})
        self.stack = Standalone(
            nodes=CLUSTER_SIZE,
            data_dir=data_dir,
            nats_port=free_port_block(CLUSTER_SIZE),
            zk_port=free_port_block(CLUSTER_SIZE),
            api_port=free_port_block(CLUSTER_SIZE),
            liftbridge_port=free_port_block(CLUSTER_SIZE),
            node_overrides=overrides,
            ha=True,
        )
        self._routes: dict[tuple[int, int], LinkProxy] = {}
        self._zk_links: dict[tuple[int, int], LinkProxy] = {}
        self._sink: LinkProxy | None = None
        # node -> a tmpfs of that many bytes as its data directory (mounted by start)
        self._disks = {
            node: TmpfsMount(self.node_data_dir(node), size)
            for node, size in (small_disks or {}).items()
        }
        try:
            self._proxy_routes()
            self._proxy_zookeeper_links()
        except BaseException:
            self._close_proxies()
            raise

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Self:
        """Mount the small disks, start every server and node (each waited ready); on failure
        everything is stopped (TmpfsUnavailableError when a small disk cannot be mounted)."""
        try:
            for disk in self._disks.values():
                disk.mount()
            self.stack.start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Heal every link (so nodes deregister and flush instead of waiting out timeouts),
        stop every process (by PID, paused ones too), then unmount the small disks (their
        users are gone) and close every proxy; each step runs whatever the previous did."""
        try:
            self._each(self.proxies, LinkProxy.pass_)
            self.stack.stop()
        finally:
            try:
                self._each(self._disks.values(), _unmount_keeping_contents)
            finally:
                self._close_proxies()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Self]:
        """``async with cluster.running():`` start and stop off the event loop (they block)."""
        await asyncio.to_thread(self.start)
        try:
            yield self
        finally:
            await asyncio.to_thread(self.stop)

    # ------------------------------------------------------------------ topology

    @property
    def node_ids(self) -> list[int]:
        return list(range(1, CLUSTER_SIZE + 1))

    def node(self, node: int) -> NodeProcess:
        return self.stack.node(node)

    def nats_server(self, server: int) -> NatsClusterServer:
        return self._ha.nats.servers[_index(server)]

    def zookeeper_server(self, server: int) -> ZooKeeperEnsembleServer:
        return self._ha.zookeeper.servers[_index(server)]

    def nats_route(self, i: int, j: int) -> LinkProxy:
        """The proxy carrying NATS server ``i``'s route to server ``j``."""
        return self._routes[(_index(i) + 1, _index(j) + 1)]

    def zk_link(self, node: int, zk: int) -> LinkProxy:
        """The proxy carrying node ``node``'s ZooKeeper connection to server ``zk``."""
        return self._zk_links[(_index(node) + 1, _index(zk) + 1)]

    @property
    def proxies(self) -> list[LinkProxy]:
        """Every route and ZooKeeper-link proxy (not the gossip sink)."""
        return [*self._routes.values(), *self._zk_links.values()]

    def api(self, node: int) -> str:
        """Node ``node``'s REST base URL."""
        return self.node(node).api_url

    @property
    def servers(self) -> str:
        """Every node's REST URL, comma-separated (a client's ``servers``)."""
        return self.stack.servers

    # ------------------------------------------------------------------ network faults

    def isolate_from_peers(self, node: int) -> None:
        """Cut NATS server ``node``'s routes to every other server, both ways (its node keeps
        ZooKeeper): the leader cut off from its followers."""
        for other in self.node_ids:
            if other != node:
                self.nats_route(node, other).blackhole()
                self.nats_route(other, node).blackhole()

    def cut_from_zookeeper(self, node: int) -> None:
        """Cut node ``node``'s links to every ZooKeeper server: its session will expire."""
        for zk in self.node_ids:
            self.zk_link(node, zk).blackhole()

    def partition(self, groups: list[set[int]]) -> None:
        """Cut every route and node↔ZooKeeper link between hosts of different groups; a host
        in no group is cut from everyone. Links inside a group are left as they are."""
        group_of = {member: g for g, members in enumerate(groups) for member in members}
        for unknown in set(group_of) - set(self.node_ids):
            raise InvalidRequestError(f"no host {unknown}: hosts are {self.node_ids}")
        for (i, j), proxy in [*self._routes.items(), *self._zk_links.items()]:
            if group_of.get(i, -i) != group_of.get(j, -j):
                proxy.blackhole()

    def unproxied_routes(self) -> list[str]:
        """Routes that bypass the proxies (a server dialed a peer's real route port): always
        empty unless gossip found a way around; a scenario can assert it after a heal."""
        real_ports = {server.route_port for server in self._ha.nats.servers}
        found = []
        for number, server in enumerate(self._ha.nats.servers, start=1):
            with urllib.request.urlopen(
                f"{server.monitor_url}/routez", timeout=REST_TIMEOUT_S
            ) as response:
                routes = json.load(response).get("routes") or []
            found += [
                f"server {number} -> {r.get('ip')}:{r.get('port')}"
                for r in routes
                if r.get("port") in real_ports
            ]
        return found

    def heal(self) -> None:
        """Every link back to pass (connections that lost bytes are reset: see LinkProxy)."""
        for proxy in self.proxies:
            proxy.pass_()

    # ------------------------------------------------------------------ process faults

    def kill(self, node: int) -> None:
        """SIGKILL node ``node`` (a crash: nothing flushed, nothing deregistered)."""
        self.node(node).kill()

    def pause(self, node: int) -> None:
        """SIGSTOP node ``node`` (a GC pause or a frozen VM: its sockets stay open)."""
        self.node(node).pause()

    def resume(self, node: int) -> None:
        self.node(node).resume()

    def restart(self, node: int) -> None:
        """Stop node ``node`` if running (cleanly) and start it on the same data, waited ready."""
        self.node(node).restart()

    def power_loss(self, node: int) -> list[DiskFault]:
        """SIGKILL node ``node``, then lose what its fsync policy did not make durable on every
        partition (see ``lose_unsynced_tail``); restart it with ``restart``."""
        self.kill(node)
        fsync = self.node(node).config.log.fsync
        return [
            fault
            for directory in self.partition_dirs(node)
            for fault in lose_unsynced_tail(directory, self.random, fsync)
        ]

    def fill_disk(self, node: int) -> Path:
        """Fill node ``node``'s small disk to ENOSPC (it must have one: ``small_disks``)."""
        return fill_disk(self._small_disk(node).path)

    def free_disk(self, node: int) -> None:
        free_disk(self._small_disk(node).path)

    def kill_zookeeper(self, zk: int) -> None:
        self.zookeeper_server(zk).kill()

    def pause_zookeeper(self, zk: int) -> None:
        self.zookeeper_server(zk).pause()

    def resume_zookeeper(self, zk: int) -> None:
        self.zookeeper_server(zk).resume()

    def restart_zookeeper(self, zk: int) -> None:
        self.zookeeper_server(zk).restart()

    def freeze_zookeeper(self) -> None:
        """SIGSTOP the whole ensemble: every session hangs, none expires while frozen."""
        for zk in self.node_ids:
            self.pause_zookeeper(zk)

    def thaw_zookeeper(self) -> None:
        for zk in self.node_ids:
            self.resume_zookeeper(zk)

    def zookeeper_without_quorum(self) -> list[int]:
        """SIGKILL two of the three ZooKeeper servers (chosen by the seed); returns them."""
        killed = sorted(self.random.sample(self.node_ids, 2))
        for zk in killed:
            self.kill_zookeeper(zk)
        return killed

    def restore_zookeeper(self) -> None:
        """Restart every ZooKeeper server that is not running, waited ready."""
        for zk in self.node_ids:
            if not self.zookeeper_server(zk).is_running():
                self.zookeeper_server(zk).restart()

    # ------------------------------------------------------------------ lookups (REST)

    def create_stream(
        self, name: str, partitions: int = 1, rf: int = CLUSTER_SIZE, **spec: Any
    ) -> dict[str, Any]:
        """Create ``name`` (subject ``jepsen.<name>``) with the cluster's safety settings."""
        body: dict[str, Any] = {
            "name": name,
            "subject": f"jepsen.{name}",
            "partitions": partitions,
            "replication_factor": rf,
            **({"min_isr": UNSAFE_MIN_ISR} if self.unsafe else {}),
            **spec,
        }
        return self._rest("POST", "/v1/streams", json=body)

    def describe(self, stream: str) -> dict[str, Any]:
        """``GET /v1/streams/<stream>`` from the first node that answers."""
        return self._rest("GET", f"/v1/streams/{stream}")

    def partition_state(self, stream: str, partition: int = 0) -> dict[str, Any]:
        """Leader, epoch, ISR, HW of one partition (from describe)."""
        for state in self.describe(stream)["partitions"]:
            if state["partition"] == partition:
                return dict(state)
        raise ClusterError(f"{stream} has no partition {partition}")

    def partition_leader(self, stream: str, partition: int = 0) -> int | None:
        """The partition's leader broker id, None while it is offline."""
        leader = int(self.partition_state(stream, partition)["leader"])
        return leader if leader >= 0 else None

    def isr(self, stream: str, partition: int = 0) -> set[int]:
        return set(self.partition_state(stream, partition)["isr"])

    def controller(self, via: Iterable[int] | None = None) -> int | None:
        """The controller's broker id as the first answering node (of ``via``) sees it."""
        answer = self._rest("GET", "/v1/cluster", via=via)
        controller = answer.get("controller")
        return int(controller) if controller is not None else None

    def live_brokers(self, via: Iterable[int] | None = None) -> set[int]:
        """The brokers registered in ZooKeeper, as the first answering node sees them."""
        answer = self._rest("GET", "/v1/cluster", via=via)
        return {int(b["broker_id"]) for b in answer["brokers"]}

    def elect_unclean(self, stream: str, partition: int, broker_id: int) -> dict[str, Any]:
        """Elect ``broker_id`` leader although it is out of the ISR (acked records may go)."""
        return self._rest(
            "POST",
            f"/v1/streams/{stream}/partitions/{partition}/unclean-election",
            params={"broker_id": broker_id, "confirm": "true"},
        )

    # ------------------------------------------------------------------ data directories

    @property
    def small_disk_nodes(self) -> set[int]:
        """The nodes whose data directory is a small tmpfs (``small_disks``)."""
        return set(self._disks)

    def node_data_dir(self, node: int) -> Path:
        return Path(self.node(node).config.data_dir)

    def partition_dirs(self, node: int, stream: str | None = None) -> list[Path]:
        """Node ``node``'s partition directories (``streams/<stream>@<created_ms>/<p>/``)."""
        pattern = f"{stream}@*/*" if stream else "*@*/*"
        found = (self.node_data_dir(node) / "streams").glob(pattern)
        return sorted(p for p in found if p.is_dir() and p.name.isdigit())

    def partition_dir(self, node: int, stream: str, partition: int = 0) -> Path:
        for path in self.partition_dirs(node, stream):
            if path.name == str(partition):
                return path
        raise ClusterError(f"node {node} has no directory for {stream}/{partition}")

    # ------------------------------------------------------------------ internals

    @property
    def _ha(self) -> HaTopology:
        if self.stack.ha is None:  # constructed with ha=True: never
            raise ClusterError("the stack has no HA topology")
        return self.stack.ha

    def _small_disk(self, node: int) -> TmpfsMount:
        disk = self._disks.get(node)
        if disk is None:
            raise InvalidRequestError(f"node {node} has no small disk (small_disks={{...}})")
        return disk

    def _proxy_routes(self) -> None:
        """Point every route at its pair's proxy, and advertise the resetting sink."""
        servers: list[NatsClusterServer] = self._ha.nats.servers
        self._sink = LinkProxy("127.0.0.1", 1, name="route-gossip-sink")
        self._sink.reset()
        for i, server in enumerate(servers, start=1):
            routes = []
            for j, peer in enumerate(servers, start=1):
                if i != j:
                    proxy = LinkProxy(peer.host, peer.route_port, name=f"route {i}->{j}")
                    self._routes[(i, j)] = proxy
                    routes.append(f"nats-route://{proxy.address}")
            server.routes = routes
            server.cluster_advertise = self._sink.address

    def _proxy_zookeeper_links(self) -> None:
        """Give node b a connect string of its own proxies, one per ZooKeeper server."""
        ensemble: list[ZooKeeperEnsembleServer] = self._ha.zookeeper.servers
        for b, node in enumerate(self.stack.nodes, start=1):
            addresses = []
            for z, zk in enumerate(ensemble, start=1):
                proxy = LinkProxy(zk.host, zk.port, name=f"zk node {b}->zk {z}")
                self._zk_links[(b, z)] = proxy
                addresses.append(proxy.address)
            node.config = dataclasses.replace(node.config, zk_connect=",".join(addresses))

    def _close_proxies(self) -> None:
        self._each([*self.proxies, *([self._sink] if self._sink else [])], LinkProxy.close)

    @staticmethod
    def _each(items: Iterable[T], action: Callable[[T], object]) -> None:
        """``action`` on every item even if some fail; then the first failure is raised."""
        failures: list[LiftlogError] = []
        for item in items:
            try:
                action(item)
            except LiftlogError as exc:
                failures.append(exc)
        if failures:
            raise failures[0]

    def _rest(
        self,
        method: str,
        path: str,
        *,
        via: Iterable[int] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """The first 2xx answer of the running nodes (``via`` or all), in order."""
        errors = []
        for node in via if via is not None else self.node_ids:
            if not self.node(node).is_running():
                continue
            try:
                response = httpx.request(
                    method, f"{self.api(node)}{path}", timeout=REST_TIMEOUT_S, **kwargs
                )
            except httpx.HTTPError as exc:
                errors.append(f"node {node}: {exc!r}")
                continue
            if response.is_success:
                return dict(response.json())
            errors.append(f"node {node}: {response.status_code} {response.text[:200]}")
        raise ClusterError(f"{method} {path}: no node answered ({'; '.join(errors) or 'none'})")


def _unmount_keeping_contents(disk: TmpfsMount) -> None:
    """Unmount ``disk`` but leave what the node wrote there (not the filler) in the directory:
    the replicas are drained and checked after the cluster stops, and a tmpfs takes its
    contents with it when unmounted (every record would then read as lost)."""
    if not disk.mounted:
        return
    kept = disk.path.with_name(f"{disk.path.name}.kept")
    shutil.rmtree(kept, ignore_errors=True)
    shutil.copytree(disk.path, kept, ignore=shutil.ignore_patterns(FILLER_NAME))
    disk.unmount()
    shutil.copytree(kept, disk.path, dirs_exist_ok=True)
    shutil.rmtree(kept, ignore_errors=True)


def _index(number: int) -> int:
    """0-based index of host ``number`` (1..3), refusing anything else."""
    if not 1 <= number <= CLUSTER_SIZE:
        raise InvalidRequestError(f"no host {number}: hosts are 1..{CLUSTER_SIZE}")
    return number - 1


def _merge(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Overrides win; nested tables merge key by key."""
    merged = dict(base)
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


@contextmanager
def jepsen_cluster_in(
    data_dir: Path,
    *,
    unsafe: bool = False,
    node_overrides: Mapping[str, Any] | None = None,
    seed: int = 0,
    small_disks: Mapping[int, int] | None = None,
) -> Iterator[JepsenCluster]:
    """A started cluster in ``data_dir``, stopped and its directory removed on exit."""
    cluster = JepsenCluster(
        data_dir,
        unsafe=unsafe,
        node_overrides=node_overrides,
        seed=seed,
        small_disks=small_disks,
    )
    try:
        yield cluster.start()
    finally:
        cluster.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture
def jepsen_cluster(temp_dir: Path, request: pytest.FixtureRequest) -> Iterator[JepsenCluster]:
    """A started proxied HA cluster, safe by default. Parametrize it ``indirect`` with True
    (unsafe) or with a mapping of ``jepsen_cluster_in`` keywords (``unsafe``,
    ``node_overrides``, ``seed``, ``small_disks``). Everything is stopped and removed after.
    From an async test, prefer ``async with JepsenCluster(...).running()``: starting blocks."""
    param = getattr(request, "param", False)
    options: dict[str, Any] = dict(param) if isinstance(param, Mapping) else {"unsafe": param}
    with jepsen_cluster_in(temp_dir / "jepsen", **options) as cluster:
        yield cluster
