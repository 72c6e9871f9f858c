"""Network fault scenarios: links cut, slowed or flapping between NATS servers and to ZooKeeper.

Each scenario waits for its fault's effect (the ISR shrank, a session expired, a leader was
elected) rather than for a fixed time; where a fault has no observable effect while it lasts (a
frozen ZooKeeper), its duration is a seeded number of publish attempts. Every choice (which
follower, how long, how slow) comes from ``run.rng``, so a seed replays its schedule.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx

from tests.support.jepsen.cluster import REST_TIMEOUT_S, JepsenCluster
from tests.support.jepsen.proxy import LinkProxy
from tests.support.jepsen.runner import Scenario, ScenarioRun

CHANGE_TIMEOUT_S = 90.0
"""Lag time or session timeout, plus the controller's reaction, on two loaded shared cores."""
ACKS_TIMEOUT_S = 60.0
ATTEMPTS_TIMEOUT_S = 300.0
ACKS_ALONE = 100
"""Records the isolated leader acknowledges on its own before it is cut from ZooKeeper."""
ACKS_UNDER_NEW_LEADER = 50
FAST_LAG_S = 1.0
"""slow_follower's ``replica_lag_time_max_s``: below a delayed follower's fetch round trip."""
FLAP_LAG_S = 3.0
"""flapping_follower's ``replica_lag_time_max_s``: a cut follower drops out within seconds."""
SLOW_DELAY_S = (0.6, 1.0)
"""Latency added each way on the slow follower's routes (its fetches take 1.2-2 s)."""
ZOOKEEPER_OUTAGE_ATTEMPTS = (10_000, 20_000)
"""How long ZooKeeper is frozen or without quorum: this many more publish attempts (acks=none
publishers never block, so attempts keep coming: 10-20 s here, longer than a session)."""
ZOMBIE_ATTEMPTS = (5000, 10_000)
"""How long the old leader stays cut from ZooKeeper after a new one is elected (10-20 s
here): the window in which it may still answer publishers as if it led."""
SLOW_ACKS = (10_000, 20_000)
"""How long the slow follower stays slow once out of the ISR: this many more acks."""
FLAPS = (3, 5)
"""How many times the flapping follower is cut and restored."""
FLAP_ACKS = (200, 5000)
"""A short cut's length in acks (acks=leader and the others' acks=all keep coming): often
shorter than the lag time, so the follower stays in the ISR and acks=all waits for it."""


# ---------------------------------------------------------------------- observations


def _partition_seen_by(cluster: JepsenCluster, stream: str, nodes: list[int]) -> dict[str, Any]:
    """Partition 0's state as the first of ``nodes`` that answers reads it from ZooKeeper.

    Asked of chosen nodes, not all: a node cut from ZooKeeper answers late or not at all, and
    a scenario wants the view of the side that still has the ensemble. Empty if none answers.
    """
    for node in nodes:
        try:
            response = httpx.get(f"{cluster.api(node)}/v1/streams/{stream}", timeout=REST_TIMEOUT_S)
        except httpx.HTTPError:
            continue
        if response.is_success:
            for state in response.json()["partitions"]:
                if state["partition"] == 0:
                    return dict(state)
    return {}


def _isr(run: ScenarioRun, via: list[int] | None = None) -> set[int] | None:
    """The ISR as ``via`` (default: every node) sees it; None when nobody answers."""
    state = _partition_seen_by(run.cluster, run.stream, via or run.cluster.node_ids)
    return set(state["isr"]) if state else None


def _leader(run: ScenarioRun, via: list[int]) -> int | None:
    """The leader as ``via`` sees it: -1 offline, None when nobody answers."""
    state = _partition_seen_by(run.cluster, run.stream, via)
    return int(state["leader"]) if state else None


async def _wait_attempts(run: ScenarioRun, more: int) -> None:
    """Until ``more`` further publish attempts ended, whatever their outcome: a fault's
    duration in units of load, for faults whose effect cannot be observed while they last."""
    history = run.workload.history
    target = len(history.attempts) + more
    await run.until(lambda: len(history.attempts) >= target, ATTEMPTS_TIMEOUT_S, f"{more} attempts")


async def _observe_acks(run: ScenarioRun, more: int, what: str) -> None:
    """Wait for ``more`` acks and note whether they came: availability is reported, never a
    verdict (the checker judges the records)."""
    try:
        await run.wait_acked(more, ACKS_TIMEOUT_S)
    except TimeoutError:
        run.note(f"no {more} acks within {ACKS_TIMEOUT_S:.0f} s {what}")
        return
    run.note(f"{more} more acks {what}")


async def _switch(proxies: list[LinkProxy], mode: Callable[[LinkProxy], None]) -> None:
    """Switch every proxy's mode off the event loop (each switch waits for the proxy's own
    loop): a blocked loop would stall the workload and its attempts would time out."""

    def switch_all() -> None:
        for proxy in proxies:
            mode(proxy)

    await asyncio.to_thread(switch_all)


def _routes_of(cluster: JepsenCluster, node: int) -> list[LinkProxy]:
    """Both directions of NATS server ``node``'s routes to every other server."""
    others = [n for n in cluster.node_ids if n != node]
    return [p for o in others for p in (cluster.nats_route(node, o), cluster.nats_route(o, node))]


# ---------------------------------------------------------------------- kafka_2013


async def kafka_2013(run: ScenarioRun) -> None:
    """The leader keeps ZooKeeper but loses its followers, shrinks the ISR to itself and
    acknowledges alone; then it loses ZooKeeper too and the controller finds no ISR member."""
    leader = await run.leader_async()
    followers = run.others(leader)
    await asyncio.to_thread(run.cluster.isolate_from_peers, leader)
    run.note(f"leader {leader} cut off from its followers {followers} (keeps ZooKeeper)")
    await run.until(lambda: _isr(run) == {leader}, CHANGE_TIMEOUT_S, "the ISR shrunk to the leader")
    run.note(f"ISR shrank to {{{leader}}}")
    await _observe_acks(run, ACKS_ALONE, "from the leader alone")
    await asyncio.to_thread(run.cluster.cut_from_zookeeper, leader)
    run.note(f"leader {leader} cut from ZooKeeper too")
    await run.until(
        lambda: _leader(run, followers) not in (None, leader),
        CHANGE_TIMEOUT_S,
        "the session to expire and the controller to re-elect",
    )
    elected = await asyncio.to_thread(_leader, run, followers)
    run.note("partition offline" if elected == -1 else f"leader {elected} elected")
    if elected == -1 and run.cluster.unsafe:
        await _elect_unclean(run, run.rng.choice(followers))


async def _elect_unclean(run: ScenarioRun, candidate: int) -> None:
    """The operator's unclean election of ``candidate``, waited until it leads."""
    others = run.others(candidate)
    via = [candidate, *others]
    await asyncio.to_thread(run.cluster.elect_unclean, run.stream, 0, candidate)
    run.note(f"operator elected {candidate} uncleanly")
    await run.until(lambda: _leader(run, via) == candidate, CHANGE_TIMEOUT_S, f"{candidate} leads")
    run.note(f"{candidate} leads")


KAFKA_2013 = Scenario(
    name="kafka_2013",
    steps=kafka_2013,
    invariant=(
        "The leader, with every publisher on its side, is cut off from its followers but not "
        "from ZooKeeper; the ISR shrinks to it. Then it is cut from ZooKeeper too, its session "
        "expires and the controller finds no live ISR member: the partition is offline until "
        "the heal. Safe: with min ISR 2 the lone leader refuses acks=all, so no acknowledged "
        "acks=all record is lost. Unsafe: with min ISR 1 it acknowledges acks=all alone; the "
        "operator's unclean election of a follower then loses those records (Jepsen's 2013 "
        "Kafka result)."
    ),
    publishers="leader",
    unsafe_loses=True,
)


# ---------------------------------------------------------------------- leader_cut_from_zookeeper


async def leader_cut_from_zookeeper(run: ScenarioRun) -> None:
    """The leader keeps its followers but loses ZooKeeper: its session expires, the controller
    elects a follower, and the old leader, unaware until it reaches a server again, is left
    serving publishers with an HW nobody advances."""
    leader = await run.leader_async()
    followers = run.others(leader)
    await asyncio.to_thread(run.cluster.cut_from_zookeeper, leader)
    run.note(f"leader {leader} cut from ZooKeeper (keeps its NATS routes)")
    await run.until(
        lambda: _leader(run, followers) not in (None, -1, leader),
        CHANGE_TIMEOUT_S,
        "the session to expire and a follower to be elected",
    )
    attempts = run.rng.randint(*ZOMBIE_ATTEMPTS)
    elected = await asyncio.to_thread(_leader, run, followers)
    run.note(f"leader {elected} elected; old leader cut for {attempts} attempts")
    await _wait_attempts(run, attempts)
    await _observe_acks(run, ACKS_UNDER_NEW_LEADER, "under the new leader, the old one cut off")


LEADER_CUT_FROM_ZOOKEEPER = Scenario(
    name="leader_cut_from_zookeeper",
    steps=leader_cut_from_zookeeper,
    invariant=(
        "The leader loses ZooKeeper but keeps its NATS routes; its session expires and the "
        "controller elects a follower from the ISR, while the old leader still believes it "
        "leads until the heal. Safe and unsafe: no acknowledged acks=all record is lost and "
        "no replicas diverge below the HW: the followers fetch from the new leader, so the old "
        "one's HW stops, and it cannot shrink its ISR to acknowledge alone (that is a "
        "ZooKeeper write); on the heal it is fenced by the new epoch and truncates. Unsafe "
        "loses nothing either: min ISR 1 only matters once the ISR has shrunk, and fsync=never "
        "only when a machine loses power, neither of which this fault does."
    ),
    publishers="leader",
    unsafe_loses=False,
)


# ---------------------------------------------------------------------- ZooKeeper outages


async def zookeeper_frozen(run: ScenarioRun) -> None:
    """SIGSTOP the whole ensemble for a seeded number of attempts (longer than a session
    timeout on this load), then thaw it: no session can expire while it is frozen."""
    attempts = run.rng.randint(*ZOOKEEPER_OUTAGE_ATTEMPTS)
    await asyncio.to_thread(run.cluster.freeze_zookeeper)
    run.note(f"ZooKeeper frozen for {attempts} attempts")
    await _wait_attempts(run, attempts)
    await asyncio.to_thread(run.cluster.thaw_zookeeper)
    run.note("ZooKeeper thawed")
    await _observe_acks(run, ACKS_UNDER_NEW_LEADER, "after the thaw")


async def zookeeper_without_quorum(run: ScenarioRun) -> None:
    """SIGKILL two of the three ZooKeeper servers for a seeded number of attempts, then
    restart them: the survivor refuses every session, none can expire meanwhile."""
    attempts = run.rng.randint(*ZOOKEEPER_OUTAGE_ATTEMPTS)
    killed = await asyncio.to_thread(run.cluster.zookeeper_without_quorum)
    run.note(f"ZooKeeper servers {killed} killed for {attempts} attempts")
    await _wait_attempts(run, attempts)
    await asyncio.to_thread(run.cluster.restore_zookeeper)
    run.note("ZooKeeper quorum restored")
    await _observe_acks(run, ACKS_UNDER_NEW_LEADER, "after the restore")


_ZOOKEEPER_OUTAGE = (
    "No acknowledged acks=all record is lost, none diverges. While the ensemble cannot "
    "answer, no session expires and no leader changes: the leader keeps serving with the ISR "
    "it has (an ISR change is postponed until ZooKeeper answers), so acks flow as long as the "
    "followers keep up (the run reports how long it was unavailable). When it answers again "
    "it may expire every session at once (a thawed ensemble's clock has passed their "
    "deadlines): the brokers register again and the leader is fenced meanwhile. Unsafe loses "
    "nothing either: the ISR could not shrink during the outage, so any leader elected after "
    "it is a clean choice holding every acknowledged record; nobody is elected uncleanly and "
    "no machine loses power."
)

ZOOKEEPER_FROZEN = Scenario(
    name="zookeeper_frozen",
    steps=zookeeper_frozen,
    invariant="Every ZooKeeper server SIGSTOPped, then resumed. " + _ZOOKEEPER_OUTAGE,
    publishers="spread",
    unsafe_loses=False,
)

ZOOKEEPER_WITHOUT_QUORUM = Scenario(
    name="zookeeper_without_quorum",
    steps=zookeeper_without_quorum,
    invariant="Two of three ZooKeeper servers SIGKILLed, then restarted. " + _ZOOKEEPER_OUTAGE,
    publishers="spread",
    unsafe_loses=False,
)


# ---------------------------------------------------------------------- lagging followers


def _out_of_isr(run: ScenarioRun, follower: int) -> bool:
    isr = _isr(run)
    return isr is not None and follower not in isr


def _in_isr(run: ScenarioRun, follower: int) -> bool:
    isr = _isr(run)
    return isr is not None and follower in isr


async def _back_in_isr(run: ScenarioRun, follower: int) -> None:
    await run.until(lambda: _in_isr(run, follower), CHANGE_TIMEOUT_S, f"{follower} back in ISR")
    run.note(f"follower {follower} back in the ISR")


async def slow_follower(run: ScenarioRun) -> None:
    """Slow one follower's routes (seeded latency each way) until the leader drops it from
    the ISR; let the others acknowledge a seeded number of records without it; restore the
    routes until it rejoins."""
    leader = await run.leader_async()
    follower = run.rng.choice(run.others(leader))
    delay_s = round(run.rng.uniform(*SLOW_DELAY_S), 3)
    routes = _routes_of(run.cluster, follower)
    await _switch(routes, lambda proxy: proxy.delay(delay_s))
    run.note(f"follower {follower}'s routes delayed {delay_s} s each way")
    await run.until(
        lambda: _out_of_isr(run, follower), CHANGE_TIMEOUT_S, f"{follower} out of the ISR"
    )
    run.note(f"follower {follower} left the ISR")
    await _observe_acks(run, run.rng.randint(*SLOW_ACKS), f"without follower {follower}")
    await _switch(routes, LinkProxy.pass_)
    run.note(f"follower {follower}'s routes at full speed again")
    await _back_in_isr(run, follower)


async def flapping_follower(run: ScenarioRun) -> None:
    """Cut and restore one follower's routes a seeded number of times; each cut lasts either
    until the follower leaves the ISR or for a seeded number of acks (it may stay in), and
    each restore until it is back in the ISR."""
    leader = await run.leader_async()
    follower = run.rng.choice(run.others(leader))
    routes = _routes_of(run.cluster, follower)
    flaps = run.rng.randint(*FLAPS)
    for flap in range(1, flaps + 1):
        until_out = run.rng.random() < 0.5
        acks = run.rng.randint(*FLAP_ACKS)
        await _switch(routes, LinkProxy.blackhole)
        if until_out:
            run.note(f"flap {flap}/{flaps}: follower {follower} cut until it leaves the ISR")
            await run.until(
                lambda: _out_of_isr(run, follower), CHANGE_TIMEOUT_S, f"{follower} out of ISR"
            )
            run.note(f"follower {follower} left the ISR")
        else:
            run.note(f"flap {flap}/{flaps}: follower {follower} cut for {acks} acks")
            await _observe_acks(run, acks, f"with follower {follower} cut")
        await _switch(routes, LinkProxy.pass_)
        run.note(f"flap {flap}/{flaps}: follower {follower}'s routes restored")
        await _back_in_isr(run, follower)


_LAGGING_FOLLOWER = (
    "Safe and unsafe: no acknowledged acks=all record is lost and no replicas diverge below "
    "the HW; the follower rejoins once it has caught up. Unsafe loses nothing either: with "
    "one follower out the ISR still holds the leader and the other follower, so acks=all "
    "waits for two copies whatever min ISR says, and a leader failure would elect the other "
    "follower cleanly (an unclean election of the lagging one is refused while an ISR member "
    "lives); no machine loses power."
)

SLOW_FOLLOWER = Scenario(
    name="slow_follower",
    steps=slow_follower,
    invariant=(
        f"One follower's NATS routes get {SLOW_DELAY_S[0]}-{SLOW_DELAY_S[1]} s of latency "
        f"each way (seeded) with replica_lag_time_max_s = {FAST_LAG_S} s, so its fetches come "
        "too rarely and the leader drops it from the ISR; then full speed again. "
        + _LAGGING_FOLLOWER
    ),
    publishers="leader",
    unsafe_loses=False,
    node_overrides={"replica_lag_time_max_s": FAST_LAG_S},
)

FLAPPING_FOLLOWER = Scenario(
    name="flapping_follower",
    steps=flapping_follower,
    invariant=(
        f"One follower's NATS routes are cut and restored {FLAPS[0]}-{FLAPS[1]} times "
        f"(seeded; replica_lag_time_max_s = {FLAP_LAG_S} s): each cut lasts until it leaves the "
        "ISR or for a seeded number of acks, each restore until it is back in the ISR. "
        + _LAGGING_FOLLOWER
    ),
    publishers="leader",
    unsafe_loses=False,
    node_overrides={"replica_lag_time_max_s": FLAP_LAG_S},
)


NETWORK_SCENARIOS: list[Scenario] = [
    KAFKA_2013,
    LEADER_CUT_FROM_ZOOKEEPER,
    ZOOKEEPER_FROZEN,
    ZOOKEEPER_WITHOUT_QUORUM,
    SLOW_FOLLOWER,
    FLAPPING_FOLLOWER,
]
