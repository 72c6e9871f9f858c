"""Recovery times of the HA topology: a NATS server lost, then the ZooKeeper quorum lost.

Run from the repository root (``make bench-ha`` does this)::

    .venv/bin/python bench/ha_recovery.py --runs 3 \
        --json bench/results/ha-recovery.json

Each run starts a fresh ``Standalone(ha=True)`` (three NATS servers, a three-server ZooKeeper
ensemble, three nodes), creates an RF=3 stream and keeps acks=all publishers running, then:

1. NATS: kill -9 the server the partition leader's node is attached to; the figure is the time
   from the kill to the first ack of a publish sent after it (the node moves to another server
   of the cluster; the publishers use a server that stays up).
   The server is started again afterwards.
2. ZooKeeper: kill -9 the ensemble leader and one more server (no quorum), keep publishing for
   a fixed window (acks, failed publishes and the longest gap between acks in it are noted),
   then start both again; the figures are the time from the quorum's return to the first
   stream create that succeeds (a ZooKeeper write) and to the first ack of a publish sent
   after it.

Each run's figures are printed, then the median with the lowest and highest run, and the
machine. Nothing is asserted. Every process is stopped (by PID) whatever happens.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from liftlog.bench.errors import BenchError
from liftlog.bench.jetstream.server import varz
from liftlog.bench.toolkit.json_object import JsonObject
from liftlog.bench.toolkit.machine import describe_machine
from liftlog.bench.toolkit.plumbing import data_root, loadavg, write_json
from liftlog.bench.toolkit.spread import Spread
from liftlog.embedded.ports import free_port_block
from liftlog.embedded.standalone import Standalone
from liftlog.embedded.standalone_ha import HA_CLUSTER_SIZE, HaTopology
from spark_log.client import Client
from spark_log.errors import LiftlogError

STREAM = "ha-recovery"
PUBLISHERS = 8
ACK_TIMEOUT_S = 2.0
WARM_UP_ACKS = 300
NO_QUORUM_WINDOW_S = 5.0
RECOVERY_TIMEOUT_S = 90.0
POLL_INTERVAL_S = 0.05
HTTP_TIMEOUT_S = 30.0


@dataclass
class AckedLoad:
    """acks=all publishers noting when each ack and each failed publish happened."""

    client: Client
    ack_times: list[float] = field(default_factory=list)
    sent_times: list[float] = field(default_factory=list)  # when each acked publish was sent
    failure_times: list[float] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def start(self) -> AckedLoad:
        self.tasks = [asyncio.create_task(self._publish(w)) for w in range(PUBLISHERS)]
        return self

    async def _publish(self, worker: int) -> None:
        seq = 0
        while not self.stop.is_set():
            seq += 1
            sent_at = time.monotonic()
            try:
                await self.client.publish(STREAM, f"w{worker}-{seq}", timeout_s=ACK_TIMEOUT_S)
            except LiftlogError:
                self.failure_times.append(time.monotonic())
                continue
            self.sent_times.append(sent_at)
            self.ack_times.append(time.monotonic())

    def acks_between(self, start: float, end: float) -> int:
        return sum(1 for t in self.ack_times if start <= t < end)

    def failures_between(self, start: float, end: float) -> int:
        return sum(1 for t in self.failure_times if start <= t < end)

    def longest_ack_gap(self, start: float, end: float) -> float:
        """The longest time without an ack between ``start`` and ``end``."""
        times = [start, *(t for t in self.ack_times if start <= t < end), end]
        return max(b - a for a, b in itertools.pairwise(times))

    async def first_ack_after(self, moment: float) -> float:
        """Seconds from ``moment`` to the first ack of a publish sent after it (waits for one):
        an ack already on its way when ``moment`` came says nothing about recovery."""

        def acked_since() -> list[float]:
            pairs = zip(self.sent_times, self.ack_times, strict=True)
            return [acked for sent, acked in pairs if sent > moment]

        await _poll(lambda: bool(acked_since()), "an ack")
        return min(acked_since()) - moment

    async def finish(self) -> None:
        self.stop.set()
        await asyncio.gather(*self.tasks)


async def _poll(
    condition: Callable[[], bool], what: str, timeout_s: float = RECOVERY_TIMEOUT_S
) -> None:
    """Wait until ``condition()`` holds (BenchError after ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise BenchError(f"no {what} within {timeout_s:.0f}s")
        await asyncio.sleep(POLL_INTERVAL_S)


def _ha(stack: Standalone) -> HaTopology:
    if stack.ha is None:
        raise BenchError("the stack is not an HA stack")
    return stack.ha


def _leader(api_url: str) -> int:
    with httpx.Client(base_url=api_url, timeout=HTTP_TIMEOUT_S) as api:
        return int(api.get(f"/v1/streams/{STREAM}").json()["partitions"][0]["leader"])


def _create(api_url: str, name: str, replication_factor: int = 1) -> int:
    """The status of a stream create; 0 when the node did not answer at all."""
    body = {"name": name, "subject": f"{name}.in", "replication_factor": replication_factor}
    try:
        with httpx.Client(base_url=api_url, timeout=HTTP_TIMEOUT_S) as api:
            return api.post("/v1/streams", json=body).status_code
    except httpx.HTTPError:
        return 0


async def measure_nats_loss(stack: Standalone, load: AckedLoad) -> JsonObject:
    """kill -9 of the leader's NATS server: seconds to the first ack after it."""
    servers = _ha(stack).nats.servers
    leader = await asyncio.to_thread(_leader, stack.nodes[0].api_url)
    server = servers[(leader - 1) % len(servers)]  # node i lists server i first
    killed_at = time.monotonic()
    server.kill()
    to_ack = await load.first_ack_after(killed_at)
    failed = load.failures_between(killed_at, killed_at + to_ack)
    await asyncio.to_thread(server.start)
    return {"first_ack_s": to_ack, "failed_publishes": failed}


async def measure_quorum_loss(stack: Standalone, load: AckedLoad, run: int) -> JsonObject:
    """Two of three ZooKeeper servers killed for a window, then started again."""
    ensemble = _ha(stack).zookeeper
    first = ensemble.leader()
    if first is None:
        raise BenchError("the ZooKeeper ensemble has no leader")
    second = next(s for s in ensemble.servers if s is not first)
    lost_at = time.monotonic()
    first.kill()
    second.kill()
    await asyncio.sleep(NO_QUORUM_WINDOW_S)
    restarting_at = time.monotonic()
    for server in (first, second):
        server.spawn()
    await _poll(lambda: ensemble.leader() is not None, "ZooKeeper leader")
    restored_at = time.monotonic()
    api_url = stack.nodes[0].api_url
    name = f"{STREAM}-after-{run}"
    while await asyncio.to_thread(_create, api_url, name) not in (200, 201):
        if time.monotonic() - restored_at > RECOVERY_TIMEOUT_S:
            raise BenchError("no stream create succeeded after the quorum returned")
        await asyncio.sleep(POLL_INTERVAL_S)
    created_at = time.monotonic()
    for server in (first, second):
        await asyncio.to_thread(server.wait_ready)
    return {
        "no_quorum_s": restarting_at - lost_at,
        "acks_without_quorum": load.acks_between(lost_at, restarting_at),
        "longest_ack_gap_without_quorum_s": load.longest_ack_gap(lost_at, restarting_at),
        "failed_publishes_without_quorum": load.failures_between(lost_at, restarting_at),
        "restart_to_quorum_s": restored_at - restarting_at,
        "quorum_to_first_create_s": created_at - restored_at,
        "quorum_to_first_ack_s": await load.first_ack_after(restored_at),
    }


async def measure_run(stack: Standalone, run: int) -> JsonObject:
    """One run on a started stack: NATS loss, then ZooKeeper quorum loss."""
    status = await asyncio.to_thread(_create, stack.nodes[0].api_url, STREAM, HA_CLUSTER_SIZE)
    if status not in (200, 201):
        raise BenchError(f"creating {STREAM} answered {status}")
    # the publishers use a NATS server that is not killed: the figure is the node's recovery,
    # not the time a client takes to find another server
    leader = await asyncio.to_thread(_leader, stack.nodes[0].api_url)
    servers = _ha(stack).nats.servers
    nats_url = servers[leader % len(servers)].url  # the one after the leader's own server
    async with Client(stack.servers, nats_url=nats_url, ack_timeout_s=ACK_TIMEOUT_S) as client:
        load = AckedLoad(client).start()
        try:
            await _poll(lambda: len(load.ack_times) >= WARM_UP_ACKS, "warm-up acks")
            nats = await measure_nats_loss(stack, load)
            zookeeper = await measure_quorum_loss(stack, load, run)
        finally:
            await load.finish()
    return {"nats_server_loss": nats, "zookeeper_quorum_loss": zookeeper}


def run_once(root: Path, run: int) -> JsonObject:
    """A fresh HA stack in ``root``, measured once and stopped whatever happens."""
    stack = Standalone(
        nodes=HA_CLUSTER_SIZE,
        data_dir=root / f"run-{run}",
        nats_port=free_port_block(HA_CLUSTER_SIZE),
        zk_port=free_port_block(HA_CLUSTER_SIZE),
        api_port=free_port_block(HA_CLUSTER_SIZE),
        liftbridge_port=free_port_block(HA_CLUSTER_SIZE),
        ha=True,
    )
    stack.start()
    try:
        figures = asyncio.run(measure_run(stack, run))
        figures["nats_server"] = str(varz(stack.nats.monitor_url).get("version", "unknown"))
        return figures
    finally:
        stack.stop()


# (part, key, label, decimals)
FIGURES = (
    ("nats_server_loss", "first_ack_s", "NATS server killed -> first ack (s)", 2),
    ("nats_server_loss", "failed_publishes", "failed publishes until then", 0),
    ("zookeeper_quorum_loss", "quorum_to_first_create_s", "quorum back -> first create (s)", 2),
    ("zookeeper_quorum_loss", "quorum_to_first_ack_s", "quorum back -> first ack (s)", 2),
    ("zookeeper_quorum_loss", "acks_without_quorum", "acks during the quorum loss", 0),
    ("zookeeper_quorum_loss", "longest_ack_gap_without_quorum_s", "longest ack gap then (s)", 2),
    ("zookeeper_quorum_loss", "failed_publishes_without_quorum", "failed publishes, no quorum", 0),
)


def summarize(runs: list[JsonObject]) -> JsonObject:
    """Median and spread (min..max) of each figure over the runs."""
    return {
        f"{part}.{key}": Spread.of([run[part][key] for run in runs]).to_json()
        for part, key, _label, _decimals in FIGURES
    }


def print_report(runs: list[JsonObject], machine: JsonObject) -> None:
    for i, run in enumerate(runs, 1):
        print(f"run {i}:")
        for part, key, label, decimals in FIGURES:
            print(f"  {label:<42} {run[part][key]:.{decimals}f}")
    print(f"over {len(runs)} run(s), median (min..max):")
    for part, key, label, decimals in FIGURES:
        spread = Spread.of([run[part][key] for run in runs])
        print(f"  {label:<42} {spread.render(decimals)}")
    print(f"machine: {machine['summary']}; load average at start {machine['loadavg_at_start']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write the figures here as JSON")
    parser.add_argument("--data-dir", help="keep each run's data here (default: a temp dir)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    started_load = loadavg()
    runs: list[JsonObject] = []
    with data_root(args.data_dir) as root:
        for run in range(1, args.runs + 1):
            print(f"run {run}/{args.runs} ...", file=sys.stderr, flush=True)
            runs.append(run_once(root, run))
    machine = {**describe_machine(runs[0]["nats_server"]), "loadavg_at_start": started_load}
    print_report(runs, machine)
    if args.json:
        body = {"runs": runs, "summary": summarize(runs), "machine": machine}
        print(f"wrote {write_json(args.json, body)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
