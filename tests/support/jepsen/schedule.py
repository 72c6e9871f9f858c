"""Randomized fault schedules: a seed becomes a printable list of fault steps, then a Scenario.

The hand-written scenarios (``scenarios_network.py``, ``scenarios_process.py``) each prove one
invariant against one fault; a random schedule looks for what nobody thought to write, by
chaining the same fault vocabulary (``JepsenCluster``) in orders and overlaps drawn from a
seed. Everything about a schedule is decided by ``Schedule.from_seed(seed, duration_s,
unsafe)`` before the cluster starts, so a failure is replayed by its seed and duration, and
its steps are printed with the verdict:

    1. isolate the leader from its peers, 6.4 s; calm 2.1 s
    2. kill -9 a follower + delay route 1<->3 by 0.2 s, 4.0 s; calm 1.3 s

A step starts its faults together, holds them for its window (a chosen length of time drawn
from the seed: the fault's duration, not a wait for any state), heals them, and then lets the
cluster recover: a calm window, then up to ``RECOVERY_TIMEOUT_S`` for ``RECOVERY_ACKS`` more
acknowledgements (a run that stays unavailable is noted, never failed: availability is
reported, correctness is the verdict). Targets are symbolic (``the leader``, ``a follower``,
``the controller``, ``node 2``) and resolved when the step starts, so "the leader" is the
leader of that moment; the run's timeline (``timeline.json``) records what each resolved to.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
import random
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from spark_log.errors import LiftlogError
from tests.support.jepsen.cluster import CLUSTER_SIZE, JepsenCluster
from tests.support.jepsen.proxy import LinkProxy
from tests.support.jepsen.runner import Scenario, ScenarioRun
from tests.support.waiting import wait_for

SCENARIO_NAME = "random"
HOLD_S = (3.0, 12.0)
"""A step's fault window, seconds (uniform): long enough to outlast the lag time and the
ZooKeeper session timeout below, short enough for several steps in a minute."""
CALM_S = (1.0, 4.0)
RECOVERY_ACKS = 10
RECOVERY_TIMEOUT_S = 30.0
STEP_ESTIMATE_S = 6.0
"""What a step costs beyond its windows (restarts, recovery): used only to plan how many
steps fill ``duration_s``."""
OVERRUN_FACTOR = 2.0
"""A schedule stops starting steps once it has run this many times its planned duration: a
cluster that recovers slowly must not blow the test budget."""
COMBINE_PROBABILITY = 0.25
DELAY_S = (0.05, 0.5)
FLAP_PERIOD_S = (0.5, 2.5)
TARGET_TIMEOUT_S = 30.0
UNSAFE_ACKS_ALONE = 50
"""Records the isolated leader acknowledges alone before it is killed (the unsafe loss)."""
NODE_OVERRIDES: dict[str, Any] = {"replica_lag_time_max_s": 4.0}
"""Followers leave the ISR after 4 s (10 s by default), so a few seconds' fault moves the ISR;
the ZooKeeper session timeout stays at its 6 s default."""

LEADER = "the leader"
FOLLOWER = "a follower"
CONTROLLER = "the controller"


class Kind(enum.Enum):
    """The fault vocabulary: what ``JepsenCluster`` can do, each with how a step prints it
    (``who``: the target or node, ``route``: a route's ends, ``parameter``: seconds)."""

    ISOLATE = "isolate {who} from its peers"
    CUT_ZOOKEEPER = "cut {who} from ZooKeeper"
    PARTITION = "partition {who} from the others"
    DELAY_ROUTE = "delay route {route} by {parameter:.2f} s"
    FLAP_ROUTE = "flap route {route} every {parameter:.1f} s"
    KILL = "kill -9 {who}"
    PAUSE = "pause {who}"
    POWER_LOSS = "power loss of {who}"
    KILL_ZOOKEEPER = "kill -9 ZooKeeper server {number}"
    FREEZE_ZOOKEEPER = "freeze ZooKeeper"
    ZOOKEEPER_WITHOUT_QUORUM = "ZooKeeper without quorum"
    UNCLEAN_ELECTION = "isolate the leader, kill it, elect a follower uncleanly"


NETWORK = (Kind.ISOLATE, Kind.CUT_ZOOKEEPER, Kind.PARTITION, Kind.DELAY_ROUTE, Kind.FLAP_ROUTE)
PROCESS = (Kind.KILL, Kind.PAUSE, Kind.POWER_LOSS)
ZOOKEEPER = (Kind.KILL_ZOOKEEPER, Kind.FREEZE_ZOOKEEPER, Kind.ZOOKEEPER_WITHOUT_QUORUM)
FAMILIES = ("network", "zookeeper", "process")
"""A combined step's faults start and heal in this order (see ``run_step``)."""
WEIGHTS: dict[Kind, int] = {
    Kind.ISOLATE: 3, Kind.CUT_ZOOKEEPER: 3, Kind.PARTITION: 3, Kind.DELAY_ROUTE: 1,
    Kind.FLAP_ROUTE: 2, Kind.KILL: 3, Kind.PAUSE: 2, Kind.POWER_LOSS: 2,
    Kind.KILL_ZOOKEEPER: 1, Kind.FREEZE_ZOOKEEPER: 1, Kind.ZOOKEEPER_WITHOUT_QUORUM: 1,
    Kind.UNCLEAN_ELECTION: 2,
}  # fmt: skip
"""How often each kind is drawn; the unclean election only in the unsafe configuration."""


class ScheduleError(LiftlogError):
    """A schedule cannot be planned or one of its steps cannot be applied as written."""


@dataclasses.dataclass(frozen=True)
class Fault:
    """One fault of a step: its kind, its target (symbolic, or concrete nodes) and a parameter
    (a delay or a flap period, seconds)."""

    kind: Kind
    target: str = ""
    nodes: tuple[int, ...] = ()
    """A route's two ends, or a partition's lone side; empty when ``target`` names it."""
    parameter_s: float = 0.0

    def describe(self) -> str:
        numbers = ",".join(str(n) for n in self.nodes)
        return str(self.kind.value).format(
            who=self.target or f"node {numbers}",
            route="<->".join(str(n) for n in self.nodes),
            number=numbers,
            parameter=self.parameter_s,
        )


@dataclasses.dataclass(frozen=True)
class Step:
    """Faults started together, held for ``hold_s``, healed; then ``calm_s`` of calm."""

    faults: tuple[Fault, ...]
    hold_s: float
    calm_s: float

    def describe(self) -> str:
        faults = " + ".join(f.describe() for f in self.faults)
        return f"{faults}, {self.hold_s:.1f} s; calm {self.calm_s:.1f} s"


@dataclasses.dataclass(frozen=True)
class Schedule:
    """A seeded list of fault steps lasting about ``duration_s``; ``scenario()`` runs it."""

    seed: int
    duration_s: float
    unsafe: bool
    steps: tuple[Step, ...]

    @classmethod
    def from_seed(cls, seed: int, duration_s: float, unsafe: bool = False) -> Schedule:
        """The schedule of ``seed``: the same arguments always give the same steps."""
        if duration_s <= 0:
            raise ScheduleError(f"a schedule needs a positive duration, got {duration_s}")
        rng = random.Random(f"schedule-{seed}")
        steps: list[Step] = []
        planned = 0.0
        while planned < duration_s:
            step = _draw_step(rng, unsafe)
            steps.append(step)
            planned += step.hold_s + step.calm_s + STEP_ESTIMATE_S
        if unsafe and not any(_loses(s) for s in steps):
            # every unsafe schedule must be able to show loss, or its run proves nothing
            steps[-1] = _unclean_step(rng)
        return cls(seed, duration_s, unsafe, tuple(steps))

    @property
    def config(self) -> str:
        return "unsafe" if self.unsafe else "safe"

    def lines(self) -> list[str]:
        """The printable form: a header naming the seed, then one numbered line per step."""
        header = f"schedule seed={self.seed} duration={self.duration_s:g}s config={self.config}"
        return [header, *(f"{i}. {s.describe()}" for i, s in enumerate(self.steps, start=1))]

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def scenario(self) -> Scenario:
        """The schedule as a ``Scenario`` for ``run_scenario`` (publishers on every server,
        so whichever side a partition leaves the leader on has publishers)."""
        return Scenario(
            name=SCENARIO_NAME,
            steps=self.run,
            invariant="no acknowledged acks=all record lost, moved or duplicated, and no "
            "divergence below the HW, whatever the seeded sequence of faults",
            publishers="spread",
            unsafe_loses=self.unsafe and any(_loses(s) for s in self.steps),
            node_overrides=NODE_OVERRIDES,
        )

    async def run(self, run: ScenarioRun) -> None:
        """Every step in order (until the overrun budget is spent), each healed before the
        next starts."""
        run.note(str(self))
        deadline = time.monotonic() + self.duration_s * OVERRUN_FACTOR
        for number, step in enumerate(self.steps, start=1):
            if time.monotonic() > deadline:
                run.note(f"over budget: steps {number}..{len(self.steps)} not run")
                return
            await run_step(run, number, step)


def _loses(step: Step) -> bool:
    return any(f.kind is Kind.UNCLEAN_ELECTION for f in step.faults)


# ---------------------------------------------------------------------- planning (pure)


def _draw_step(rng: random.Random, unsafe: bool) -> Step:
    first = _draw_fault(rng, _kinds(unsafe))
    faults = [first]
    if first.kind is not Kind.UNCLEAN_ELECTION and rng.random() < COMBINE_PROBABILITY:
        # a second fault of another family (network with process or ZooKeeper), so the two
        # act on different layers instead of one undoing the other
        others = [k for k in _kinds(False) if family(k) != family(first.kind)]
        faults.append(_draw_fault(rng, others))
    faults.sort(key=lambda f: FAMILIES.index(family(f.kind)))
    return Step(tuple(faults), _uniform(rng, HOLD_S), _uniform(rng, CALM_S))


def _unclean_step(rng: random.Random) -> Step:
    fault = _draw_fault(rng, [Kind.UNCLEAN_ELECTION])
    return Step((fault,), _uniform(rng, HOLD_S), _uniform(rng, CALM_S))


def _kinds(unsafe: bool) -> list[Kind]:
    return [k for k in WEIGHTS if unsafe or k is not Kind.UNCLEAN_ELECTION]


def family(kind: Kind) -> str:
    if kind in NETWORK:
        return "network"
    return "zookeeper" if kind in ZOOKEEPER else "process"


def _draw_fault(rng: random.Random, kinds: list[Kind]) -> Fault:
    kind = rng.choices(kinds, weights=[WEIGHTS[k] for k in kinds])[0]
    nodes = list(range(1, CLUSTER_SIZE + 1))
    match kind:
        case Kind.DELAY_ROUTE:
            return Fault(kind, nodes=_pair(rng, nodes), parameter_s=_uniform(rng, DELAY_S, 2))
        case Kind.FLAP_ROUTE:
            return Fault(kind, nodes=_pair(rng, nodes), parameter_s=_uniform(rng, FLAP_PERIOD_S))
        case Kind.KILL_ZOOKEEPER:
            return Fault(kind, nodes=(rng.choice(nodes),))
        case Kind.FREEZE_ZOOKEEPER | Kind.ZOOKEEPER_WITHOUT_QUORUM | Kind.UNCLEAN_ELECTION:
            return Fault(kind)
        case Kind.PAUSE | Kind.CUT_ZOOKEEPER:
            return _targeted(rng, kind, nodes, (LEADER, FOLLOWER, CONTROLLER, "node"))
        case _:
            return _targeted(rng, kind, nodes, (LEADER, FOLLOWER, "node"))


def _targeted(rng: random.Random, kind: Kind, nodes: list[int], targets: tuple[str, ...]) -> Fault:
    target = rng.choice(targets)
    if target == "node":
        return Fault(kind, nodes=(rng.choice(nodes),))
    return Fault(kind, target=target)


def _pair(rng: random.Random, nodes: list[int]) -> tuple[int, ...]:
    return tuple(sorted(rng.sample(nodes, 2)))


def _uniform(rng: random.Random, bounds: tuple[float, float], digits: int = 1) -> float:
    return round(rng.uniform(*bounds), digits)


# ---------------------------------------------------------------------- running a step

Heal = Callable[[], Awaitable[None]]


async def run_step(run: ScenarioRun, number: int, step: Step) -> None:
    """Resolve every target first (so one fault does not move another's target), start the
    faults, hold them, heal them in the order applied, then recover (a heal that fails ends
    the run: the runner's own heal then undoes whatever is left)."""
    resolved = [await _resolve(run, fault) for fault in step.faults]
    heals: list[Heal] = []
    try:
        for fault, nodes in zip(step.faults, resolved, strict=True):
            run.note(f"step {number}: {fault.describe()} -> nodes {list(nodes)}")
            heals.append(await _apply(run, fault, nodes, step.hold_s))
        await fault_window(step.hold_s)
    finally:
        # in the order applied: network, then ZooKeeper, then processes, so a restarted
        # node finds its links and ZooKeeper back (it is waited ready)
        for heal in heals:
            await heal()
        run.note(f"step {number}: healed")
    await _recover(run, number, step.calm_s)


async def fault_window(seconds: float) -> None:
    """Hold a fault for ``seconds``: the fault's chosen duration (drawn from the seed), not a
    wait for any state, so a fixed length of time is what is wanted here."""
    with_no_end = asyncio.Event()
    try:
        await asyncio.wait_for(with_no_end.wait(), seconds)
    except TimeoutError:
        return


async def _recover(run: ScenarioRun, number: int, calm_s: float) -> None:
    """A calm window, then further acknowledgements before the next step (noted if none)."""
    await fault_window(calm_s)
    try:
        await run.wait_acked(RECOVERY_ACKS, RECOVERY_TIMEOUT_S)
    except TimeoutError:
        run.note(f"step {number}: no {RECOVERY_ACKS} acks within {RECOVERY_TIMEOUT_S:.0f} s")


async def _resolve(run: ScenarioRun, fault: Fault) -> tuple[int, ...]:
    """The concrete nodes a fault acts on now."""
    if fault.nodes:
        return fault.nodes
    if fault.target in (LEADER, FOLLOWER) or fault.kind is Kind.UNCLEAN_ELECTION:
        leader = await _current(run, lambda c: c.partition_leader(run.stream))
        if fault.target == FOLLOWER:
            return (run.rng.choice(run.others(leader)),)
        return (leader,)
    if fault.target == CONTROLLER:
        return (await _current(run, lambda c: c.controller()),)
    return ()


async def _current(run: ScenarioRun, lookup: Callable[[JepsenCluster], int | None]) -> int:
    """The node ``lookup`` names (waited for up to ``TARGET_TIMEOUT_S``); a seeded random node
    when none does in time (a partition left offline by an earlier step, say)."""
    found: list[int] = []

    def named() -> bool:
        try:
            node = lookup(run.cluster)
        except LiftlogError:
            return False
        found[:] = [node] if node is not None and node > 0 else []
        return bool(found)

    try:
        await asyncio.to_thread(wait_for, named, TARGET_TIMEOUT_S, 0.2, "a fault target")
    except AssertionError:
        fallback = run.rng.choice(run.cluster.node_ids)
        run.note(f"no target named within {TARGET_TIMEOUT_S:.0f} s: node {fallback} instead")
        return fallback
    return found[0]


async def _apply(run: ScenarioRun, fault: Fault, nodes: tuple[int, ...], hold_s: float) -> Heal:
    """Start ``fault`` on ``nodes``; returns how to heal it."""
    cluster = run.cluster

    def blocking(action: Callable[[], object]) -> Heal:
        async def heal() -> None:
            await asyncio.to_thread(action)

        return heal

    match fault.kind:
        case Kind.ISOLATE:
            await asyncio.to_thread(cluster.isolate_from_peers, nodes[0])
            return blocking(lambda: _pass_routes(cluster, nodes[0]))
        case Kind.CUT_ZOOKEEPER:
            await asyncio.to_thread(cluster.cut_from_zookeeper, nodes[0])
            return blocking(lambda: _pass_zookeeper_links(cluster, nodes[0]))
        case Kind.PARTITION:
            groups = [set(nodes), set(run.others(nodes[0]))]
            await asyncio.to_thread(cluster.partition, groups)
            return blocking(cluster.heal)
        case Kind.DELAY_ROUTE:
            await asyncio.to_thread(_each_way, cluster, nodes, partial(_delay, fault.parameter_s))
            return blocking(lambda: _each_way(cluster, nodes, _pass))
        case Kind.FLAP_ROUTE:
            return _flapping(cluster, nodes, fault.parameter_s)
        case Kind.KILL:
            await asyncio.to_thread(cluster.kill, nodes[0])
            return blocking(lambda: cluster.restart(nodes[0]))
        case Kind.PAUSE:
            await asyncio.to_thread(cluster.pause, nodes[0])
            return blocking(lambda: cluster.resume(nodes[0]))
        case Kind.POWER_LOSS:
            damage = await asyncio.to_thread(cluster.power_loss, nodes[0])
            run.note(f"power loss of node {nodes[0]}: {[d.kind for d in damage]}")
            return blocking(lambda: cluster.restart(nodes[0]))
        case Kind.KILL_ZOOKEEPER:
            await asyncio.to_thread(cluster.kill_zookeeper, nodes[0])
            return blocking(cluster.restore_zookeeper)
        case Kind.FREEZE_ZOOKEEPER:
            await asyncio.to_thread(cluster.freeze_zookeeper)
            return blocking(cluster.thaw_zookeeper)
        case Kind.ZOOKEEPER_WITHOUT_QUORUM:
            killed = await asyncio.to_thread(cluster.zookeeper_without_quorum)
            run.note(f"ZooKeeper servers {killed} killed")
            return blocking(cluster.restore_zookeeper)
        case Kind.UNCLEAN_ELECTION:
            return await _unclean_election(run, nodes[0], hold_s)
    raise ScheduleError(f"no way to apply {fault.kind}")


async def _unclean_election(run: ScenarioRun, leader: int, hold_s: float) -> Heal:
    """The unsafe configuration's loss: the leader, isolated, shrinks the ISR to itself and
    acknowledges alone (min ISR 1) for up to the window; then it dies, the partition goes
    offline, and the operator elects a follower that never saw those records. Each wait is
    bounded and noted when it runs out (the step then does what it still can). Heals by
    restarting the old leader (it truncates to the new epoch)."""
    cluster = run.cluster
    await asyncio.to_thread(cluster.isolate_from_peers, leader)
    await _until_noted(run, lambda: _isr_or_none(run) == {leader}, "the ISR shrunk to the leader")
    with contextlib.suppress(TimeoutError):
        await run.wait_acked(UNSAFE_ACKS_ALONE, hold_s)
    await asyncio.to_thread(cluster.kill, leader)
    await _until_noted(run, lambda: _leader_or_zero(run) is None, "the partition offline")
    chosen = run.rng.choice(run.others(leader))
    try:
        await asyncio.to_thread(cluster.elect_unclean, run.stream, 0, chosen)
        run.note(f"node {chosen} elected uncleanly (node {leader} killed)")
    except LiftlogError as exc:  # a clean election got there first: nothing to force
        run.note(f"unclean election of node {chosen} refused: {exc}")

    def heal() -> None:
        _pass_routes(cluster, leader)
        cluster.restart(leader)

    return lambda: asyncio.to_thread(heal)


async def _until_noted(run: ScenarioRun, condition: Callable[[], bool], what: str) -> None:
    """Poll ``condition`` up to ``TARGET_TIMEOUT_S``; noted (not raised) when it never holds."""
    try:
        await run.until(condition, TARGET_TIMEOUT_S, what)
    except AssertionError:
        run.note(f"not seen within {TARGET_TIMEOUT_S:.0f} s: {what}")


def _isr_or_none(run: ScenarioRun) -> set[int] | None:
    try:
        return run.cluster.isr(run.stream)
    except LiftlogError:
        return None


def _leader_or_zero(run: ScenarioRun) -> int | None:
    """The leader, None while offline, 0 while no node answers (so "offline" is seen only
    when a node says so)."""
    try:
        return run.cluster.partition_leader(run.stream)
    except LiftlogError:
        return 0


def _flapping(cluster: JepsenCluster, nodes: tuple[int, ...], period_s: float) -> Heal:
    """Start cutting and restoring a route every ``period_s``; the heal stops the flapping
    (after its toggle in flight, so no late cut lands after the heal) and passes the route."""
    stop = asyncio.Event()

    async def flap() -> None:
        cut = False
        while not stop.is_set():
            cut = not cut
            action = _cut if cut else _pass
            await asyncio.to_thread(_each_way, cluster, nodes, action)
            with contextlib.suppress(TimeoutError):  # the period is the fault itself
                await asyncio.wait_for(stop.wait(), period_s)

    task = asyncio.create_task(flap())

    async def heal() -> None:
        stop.set()
        await task
        await asyncio.to_thread(_each_way, cluster, nodes, _pass)

    return heal


def _cut(proxy: LinkProxy) -> None:
    proxy.blackhole()


def _delay(seconds: float, proxy: LinkProxy) -> None:
    proxy.delay(seconds)


def _pass(proxy: LinkProxy) -> None:
    proxy.pass_()


def _each_way(
    cluster: JepsenCluster, nodes: tuple[int, ...], action: Callable[[LinkProxy], None]
) -> None:
    """``action`` on the route proxies of the pair ``nodes``, both directions."""
    a, b = nodes
    action(cluster.nats_route(a, b))
    action(cluster.nats_route(b, a))


def _pass_routes(cluster: JepsenCluster, node: int) -> None:
    for other in cluster.node_ids:
        if other != node:
            _each_way(cluster, (node, other), _pass)


def _pass_zookeeper_links(cluster: JepsenCluster, node: int) -> None:
    for zk in cluster.node_ids:
        cluster.zk_link(node, zk).pass_()
