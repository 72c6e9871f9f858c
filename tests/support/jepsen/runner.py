"""One scenario run, start to verdict: cluster, stream, workload, faults, heal, drain, check.

Every scenario (a ``Scenario``: a name, its fault steps and the invariant it proves) runs the
same loop so the table in docs/faults.md compares like with like:

1. a fresh proxied HA cluster (``JepsenCluster``), safe or unsafe, seeded;
2. an RF=3 stream, waited until every replica is in the ISR;
3. the workload (every acks level, singles and batches, with and without a msg id) on the side
   the scenario names, waited until it has acknowledgements before any fault;
4. the scenario's steps (they inject faults and wait for their effect; ``ScenarioRun.note``
   records the fault timeline);
5. everything healed (links, paused and dead processes, ZooKeeper, full disks) and the workload
   given a little time to be acknowledged again;
6. the workload stopped, the replicas left to converge, the stack stopped cleanly;
7. every replica drained offline and checked; the report written under ``results_dir``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import random
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from spark_log.errors import LiftlogError
from tests.support.jepsen.checker import check
from tests.support.jepsen.cluster import JepsenCluster
from tests.support.jepsen.drain import drain
from tests.support.jepsen.history import History
from tests.support.jepsen.quiescence import wait_quiescent
from tests.support.jepsen.report import write_report
from tests.support.jepsen.result import CheckResult
from tests.support.jepsen.workload import PublisherSpec, Workload, default_mix
from tests.support.waiting import wait_for

log = logging.getLogger(__name__)

FULL_ISR_TIMEOUT_S = 60.0
FIRST_ACKS = 50
FIRST_ACKS_TIMEOUT_S = 60.0
ACKS_AFTER_HEAL = 20
ACKS_AFTER_HEAL_TIMEOUT_S = 60.0
QUIESCENCE_TIMEOUT_S = 60.0
PUBLISHERS_PER_SERVER = 6
RESULTS_FILE = "runs.jsonl"


@dataclasses.dataclass
class ScenarioRun:
    """What a scenario's steps act on: the cluster, the stream, the running workload, a seeded
    random source, and the fault timeline they write into."""

    cluster: JepsenCluster
    stream: str
    workload: Workload
    rng: random.Random
    started: float = dataclasses.field(default_factory=time.monotonic)
    timeline: list[tuple[float, str]] = dataclasses.field(default_factory=list)

    def note(self, event: str) -> None:
        """Record a fault or observation at its time since the run started (for the report)."""
        self.timeline.append((round(time.monotonic() - self.started, 3), event))
        log.info("jepsen %s: %s", self.stream, event)

    def leader(self, partition: int = 0) -> int:
        """The partition's current leader (ClusterError-free: waits until there is one)."""
        found: list[int] = []

        def elected() -> bool:
            try:
                leader = self.cluster.partition_leader(self.stream, partition)
            except LiftlogError:
                return False
            found[:] = [leader] if leader is not None else []
            return bool(found)

        wait_for(elected, FULL_ISR_TIMEOUT_S, message=f"a leader for {self.stream}/{partition}")
        return found[0]

    async def leader_async(self, partition: int = 0) -> int:
        return await asyncio.to_thread(self.leader, partition)

    async def wait_acked(self, more: int, timeout_s: float = FIRST_ACKS_TIMEOUT_S) -> int:
        """Until ``more`` further records are acknowledged (TimeoutError otherwise)."""
        return await self.workload.wait_acked(more, timeout_s)

    async def until(self, condition: Callable[[], bool], timeout_s: float, what: str) -> None:
        """Poll ``condition`` (blocking calls allowed) off the event loop until it holds."""
        await asyncio.to_thread(wait_for, condition, timeout_s, message=what)

    def others(self, node: int) -> list[int]:
        return [n for n in self.cluster.node_ids if n != node]


Steps = Callable[[ScenarioRun], Awaitable[None]]


@dataclasses.dataclass(frozen=True)
class Scenario:
    """A named fault schedule and the invariant it checks.

    ``publishers``: ``"leader"`` puts every publisher on the leader's NATS server (the
    publisher on the leader's side of a partition), ``"spread"`` spreads them over all three.
    ``unsafe_loses``: in the unsafe configuration this fault must show acknowledged loss
    (proof that the checker sees it); False where even the unsafe configuration cannot lose
    an acks=all record to it (the table says why).
    """

    name: str
    steps: Steps
    invariant: str
    publishers: str = "leader"
    unsafe_loses: bool = True
    partitions: int = 1
    node_overrides: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    small_disks: Mapping[int, int] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class RunOutcome:
    """A checked run: the verdict, the history and where its report went."""

    scenario: str
    unsafe: bool
    seed: int
    result: CheckResult
    history: History
    report_dir: Path
    timeline: list[tuple[float, str]]


async def run_scenario(
    scenario: Scenario, work_dir: Path, results_dir: Path, *, unsafe: bool, seed: int
) -> RunOutcome:
    """Run ``scenario`` once on a fresh cluster in ``work_dir``; check and report it."""
    cluster = JepsenCluster(
        work_dir / "cluster",
        unsafe=unsafe,
        node_overrides=scenario.node_overrides,
        seed=seed,
        small_disks=scenario.small_disks,
    )
    stream = f"{scenario.name.replace('_', '-')}-{uuid.uuid4().hex[:6]}"
    async with cluster.running():
        history, run, leaders = await _run_on(cluster, scenario, stream, seed)
    replicas = drain([(n, cluster.node_data_dir(n)) for n in cluster.node_ids], stream)
    result = check(history, replicas, leaders=leaders)
    config = "unsafe" if unsafe else "safe"
    report_dir = write_report(
        results_dir / f"{scenario.name}-{config}-{seed}", history, result, replicas
    )
    (report_dir / "timeline.json").write_text(json.dumps(run.timeline, indent=1))
    _append_row(results_dir, scenario.name, config, seed, result)
    return RunOutcome(scenario.name, unsafe, seed, result, history, report_dir, run.timeline)


async def _run_on(
    cluster: JepsenCluster, scenario: Scenario, stream: str, seed: int
) -> tuple[History, ScenarioRun, dict[int, int]]:
    await asyncio.to_thread(cluster.create_stream, stream, scenario.partitions)
    await asyncio.to_thread(
        wait_for, lambda: _fully_replicated(cluster, stream), FULL_ISR_TIMEOUT_S, message="ISR"
    )
    leader = cluster.partition_leader(stream) or 1
    workload = Workload(cluster.servers, stream, _publishers(cluster, scenario, leader)).start()
    run = ScenarioRun(cluster, stream, workload, random.Random(seed))
    try:
        await run.wait_acked(FIRST_ACKS)
        run.note(f"workload acknowledged; leader is {leader}")
        try:
            await scenario.steps(run)
        finally:
            await asyncio.to_thread(restore_everything, cluster)
            run.note("healed")
        await _acked_after_heal(run)
    finally:
        history = await workload.stop()
    await _settle(cluster, stream, run)
    return history, run, _leaders(cluster, stream)


def _publishers(cluster: JepsenCluster, scenario: Scenario, leader: int) -> list[PublisherSpec]:
    if scenario.publishers == "leader":
        return default_mix(cluster.nats_server(leader).url, PUBLISHERS_PER_SERVER * 2)
    specs: list[PublisherSpec] = []
    for node in cluster.node_ids:
        specs += default_mix(cluster.nats_server(node).url, PUBLISHERS_PER_SERVER, len(specs))
    return specs


def restore_everything(cluster: JepsenCluster) -> None:
    """Undo every fault: links pass, ZooKeeper thawed and restarted, full disks freed, paused
    nodes resumed and dead ones restarted (each waited ready)."""
    cluster.heal()
    for zk in cluster.node_ids:
        if cluster.zookeeper_server(zk).is_running():
            cluster.resume_zookeeper(zk)
    cluster.restore_zookeeper()
    for node in cluster.node_ids:
        if node in cluster.small_disk_nodes:
            cluster.free_disk(node)
        if cluster.node(node).is_running():
            cluster.resume(node)
        else:
            cluster.restart(node)


async def _acked_after_heal(run: ScenarioRun) -> None:
    """Availability after the heal is reported (the timeline), never a verdict: an unsafe run
    may have lost its partition for good."""
    try:
        await run.wait_acked(ACKS_AFTER_HEAL, ACKS_AFTER_HEAL_TIMEOUT_S)
        run.note("acknowledged again after the heal")
    except TimeoutError:
        run.note(f"no {ACKS_AFTER_HEAL} acks within {ACKS_AFTER_HEAL_TIMEOUT_S:.0f} s of the heal")


async def _settle(cluster: JepsenCluster, stream: str, run: ScenarioRun) -> None:
    """Let the replicas converge before the stack stops (drained replicas then compare equal
    below the HW); a run that does not converge is still drained and checked."""
    urls = {n: cluster.api(n) for n in cluster.node_ids}
    try:
        await asyncio.to_thread(wait_quiescent, urls, stream, QUIESCENCE_TIMEOUT_S)
        run.note("replicas converged")
    except AssertionError:  # wait_quiescent's timeout (tests.support.waiting.wait_for)
        run.note(f"replicas did not converge within {QUIESCENCE_TIMEOUT_S:.0f} s")


def _fully_replicated(cluster: JepsenCluster, stream: str) -> bool:
    try:
        partitions = cluster.describe(stream)["partitions"]
    except LiftlogError:
        return False
    return all(len(p["isr"]) == len(p["replicas"]) and p["leader"] > 0 for p in partitions)


def _leaders(cluster: JepsenCluster, stream: str) -> dict[int, int]:
    """Each partition's final leader (the checker reads the committed log from it)."""
    try:
        partitions = cluster.describe(stream)["partitions"]
    except LiftlogError:
        return {}
    return {int(p["partition"]): int(p["leader"]) for p in partitions if int(p["leader"]) > 0}


def _append_row(
    results_dir: Path, scenario: str, config: str, seed: int, result: CheckResult
) -> None:
    """One JSON line per run in ``runs.jsonl``: what docs/faults.md's table is built from."""
    row = {
        "scenario": scenario,
        "config": config,
        "seed": seed,
        "valid": result.valid,
        "acknowledged": result.acknowledged,
        "lost": result.lost,
        "duplicated": result.duplicated,
        "divergent": result.divergent,
        "seconds_unavailable": round(result.seconds_unavailable, 2),
    }
    results_dir.mkdir(parents=True, exist_ok=True)
    with (results_dir / RESULTS_FILE).open("a") as out:
        out.write(json.dumps(row) + "\n")
