"""Process and disk faults: crashes, pauses past a session, power cuts and a full disk.

Each scenario is a ``Scenario`` for ``runner.run_scenario``: its steps inject a fault and wait
for its effect (a new leader elected, a new controller, the ISR shrunk, a disk stalled), never
for a fixed time, and draw every choice from ``run.rng`` so a seed replays. Its invariant is
the text docs/faults.md shows; ``unsafe_loses`` says whether the unsafe configuration
(``fsync = "never"``, ``min_isr = 1``, unclean election when only it brings a partition back)
must show acknowledged loss to this fault, and the invariant says why where it cannot.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from spark_log.errors import LiftlogError
from tests.support.jepsen.cluster import REST_TIMEOUT_S, JepsenCluster
from tests.support.jepsen.disk_faults import DiskFault, flip_bytes, truncate_segment
from tests.support.jepsen.history import ACKS_ALL, OK
from tests.support.jepsen.runner import Scenario, ScenarioRun
from tests.support.waiting import wait_for

KILLS = 5
ELECTION_TIMEOUT_S = 60.0
"""A new leader after a kill: the controller sees the session expire (zk_session_timeout_s)
and elects; a restarted node also re-registers within it."""
SESSION_EXPIRY_TIMEOUT_S = 90.0
"""A paused node's session expiring and the cluster acting on it (default session 6 s)."""
REJOIN_TIMEOUT_S = 120.0
"""A restarted or resumed replica fetching back into the ISR (after truncating)."""
ACKS_BETWEEN_FAULTS = 20
"""Records acknowledged between two faults: proof the cluster took writes again."""
ACKS_UNDER_ZOMBIE = 200
"""Records the new leader acknowledges while the zombie sleeps: its log moves well past the
zombie's, so the zombie has a tail to truncate and records to fetch."""
REFUSALS_WANTED = 50
"""``storage_error`` refusals to observe while the disk is full."""
LAG_OVERRIDES = {"replica_lag_time_max_s": 4.0}
"""A paused follower leaves the ISR sooner (the schedule waits for that shrink)."""
SMALL_DISK_BYTES = 96 * 1024 * 1024
"""Every node's data directory in ``full_disk``: room for the run, filled on demand."""
STORAGE_ERROR = "storage_error"


class ReplicaViewError(LiftlogError):
    """A node did not answer for its own replica (down, paused, no such partition yet)."""


# ---------------------------------------------------------------------------- lookups


def leader_or_none(run: ScenarioRun) -> int | None:
    """The partition's leader now; None while offline or while no node answers."""
    try:
        return run.cluster.partition_leader(run.stream)
    except LiftlogError:
        return None


def state_or_none(run: ScenarioRun) -> dict[str, Any] | None:
    try:
        return run.cluster.partition_state(run.stream)
    except LiftlogError:
        return None


def fully_in_sync(run: ScenarioRun) -> bool:
    """Every replica back in the ISR under a leader: the next fault starts from RF=3."""
    state = state_or_none(run)
    if state is None:
        return False
    return int(state["leader"]) > 0 and len(state["isr"]) == len(state["replicas"])


def replica_view(cluster: JepsenCluster, node: int, stream: str) -> dict[str, Any]:
    """Node ``node``'s own view of its replica of partition 0 (role, epoch, HW, LEO, fenced,
    recovery loss): what it believes, whatever the controller recorded."""
    url = f"{cluster.api(node)}/v1/streams/{stream}/partitions/0"
    try:
        response = httpx.get(url, timeout=REST_TIMEOUT_S)
    except httpx.HTTPError as exc:
        raise ReplicaViewError(f"node {node}: {exc!r}") from exc
    if not response.is_success:
        raise ReplicaViewError(f"node {node}: {response.status_code} {response.text[:200]}")
    return dict(response.json())


def controller_seen_by(run: ScenarioRun, via: list[int]) -> int | None:
    try:
        return run.cluster.controller(via=via)
    except LiftlogError:
        return None


async def elect_new_leader(run: ScenarioRun, gone: set[int]) -> int:
    """Wait until a leader outside ``gone`` is elected; returns it."""
    found: list[int] = []

    def elected() -> bool:
        leader = leader_or_none(run)
        found[:] = [leader] if leader is not None and leader not in gone else []
        return bool(found)

    await run.until(elected, ELECTION_TIMEOUT_S, f"a leader other than {sorted(gone)}")
    run.note(f"node {found[0]} elected leader")
    return found[0]


async def back_in_sync(run: ScenarioRun) -> None:
    await run.until(lambda: fully_in_sync(run), REJOIN_TIMEOUT_S, "every replica in the ISR")
    run.note("ISR full again")


async def restart(run: ScenarioRun, node: int) -> None:
    """Restart ``node`` (blocking: waited ready) off the event loop."""
    await asyncio.to_thread(run.cluster.restart, node)
    run.note(f"node {node} restarted")


# ---------------------------------------------------------------------------- leader_kill_5x


async def leader_kill_5x(run: ScenarioRun) -> None:
    """kill -9 the leader; a new leader takes writes; the old one restarts and rejoins: 5x."""
    for round_ in range(1, KILLS + 1):
        leader = await run.leader_async()
        await asyncio.to_thread(run.cluster.kill, leader)
        run.note(f"kill {round_}/{KILLS}: node {leader} (the leader) killed")
        await elect_new_leader(run, {leader})
        await run.wait_acked(ACKS_BETWEEN_FAULTS)
        await restart(run, leader)
        await back_in_sync(run)


LEADER_KILL_5X = Scenario(
    "leader_kill_5x",
    leader_kill_5x,
    "kill -9 of the current leader five times in a row (each time a new leader is elected "
    "and takes writes, then the killed node restarts and rejoins the ISR): no acks=all "
    "record lost, none duplicated, replicas identical below the HW. The unsafe "
    "configuration cannot lose to it either: kill -9 keeps the page cache (fsync=never "
    "loses nothing to a process crash), and acks=all waits for every ISR member, so the "
    "ISR member elected holds every acknowledged record.",
    unsafe_loses=False,
)


# ---------------------------------------------------------------------------- zombie_leader


async def zombie_leader(run: ScenarioRun) -> None:
    """SIGSTOP the leader until another is elected, publish on, SIGCONT: it must be fenced,
    truncate what the new leader never had, and rejoin as a follower."""
    zombie = await run.leader_async()
    epoch = int(run.cluster.partition_state(run.stream)["leader_epoch"])
    await asyncio.to_thread(run.cluster.pause, zombie)
    run.note(f"node {zombie} (the leader, epoch {epoch}) paused")
    await run.until(
        lambda: (leader_or_none(run) or zombie) != zombie,
        SESSION_EXPIRY_TIMEOUT_S,
        "the controller electing past the paused leader",
    )
    run.note(f"node {leader_or_none(run)} elected while node {zombie} is paused")
    await run.wait_acked(ACKS_UNDER_ZOMBIE)
    await asyncio.to_thread(run.cluster.resume, zombie)
    run.note(f"node {zombie} resumed (a zombie leader of epoch {epoch})")
    await run.until(
        lambda: _follows_newer_epoch(run, zombie, epoch),
        SESSION_EXPIRY_TIMEOUT_S,
        f"node {zombie} stepping down to a newer epoch",
    )
    run.note(f"node {zombie} is a follower of a newer epoch")
    await back_in_sync(run)


def _follows_newer_epoch(run: ScenarioRun, node: int, epoch: int) -> bool:
    try:
        view = replica_view(run.cluster, node, run.stream)
    except ReplicaViewError:
        return False
    return view.get("role") != "leader" and int(view.get("leader_epoch") or 0) > epoch


ZOMBIE_LEADER = Scenario(
    "zombie_leader",
    zombie_leader,
    "The leader is SIGSTOPped past its ZooKeeper session until the controller elects "
    "another; publishing goes on; then SIGCONT: the zombie is fenced by the leader epoch, "
    "steps down, truncates its tail to the new leader's and rejoins. No acks=all record "
    "lost, none duplicated, no divergence below the HW. The unsafe configuration cannot "
    "lose to it either: fencing does not depend on fsync or min ISR, and the zombie cannot "
    "acknowledge alone since shrinking its ISR is a conditional ZooKeeper write its stale "
    "epoch fails.",
    unsafe_loses=False,
)


# ---------------------------------------------------------------------------- zombie_controller


async def zombie_controller(run: ScenarioRun) -> None:
    """SIGSTOP the controller until another node is controller; meanwhile kill the leader
    (the new controller must elect); SIGCONT: the zombie controller's writes are fenced."""
    zombie = await asyncio.to_thread(_controller, run)
    await asyncio.to_thread(run.cluster.pause, zombie)
    run.note(f"node {zombie} (the controller) paused")
    awake = run.others(zombie)
    await run.until(
        lambda: controller_seen_by(run, awake) not in (None, zombie),
        SESSION_EXPIRY_TIMEOUT_S,
        "another node becoming controller",
    )
    run.note(f"node {controller_seen_by(run, awake)} is controller")
    leader = await elect_new_leader(run, {zombie})
    killed = leader if run.rng.random() < 0.5 else next(n for n in awake if n != leader)
    await asyncio.to_thread(run.cluster.kill, killed)
    run.note(f"node {killed} ({'the leader' if killed == leader else 'a follower'}) killed")
    if killed == leader:
        await elect_new_leader(run, {zombie, killed})
    await asyncio.to_thread(run.cluster.resume, zombie)
    run.note(f"node {zombie} resumed (a zombie controller)")
    await run.until(
        lambda: controller_seen_by(run, [zombie]) not in (None, zombie),
        SESSION_EXPIRY_TIMEOUT_S,
        f"node {zombie} seeing it is no longer controller",
    )
    run.note(f"node {zombie} sees node {controller_seen_by(run, [zombie])} as controller")
    await restart(run, killed)
    await back_in_sync(run)


def _controller(run: ScenarioRun) -> int:
    """The controller as any node sees it (blocking: waits until one is known)."""
    found: list[int] = []

    def known() -> bool:
        controller = controller_seen_by(run, run.cluster.node_ids)
        found[:] = [controller] if controller is not None else []
        return bool(found)

    wait_for(known, ELECTION_TIMEOUT_S, message="a controller")
    return found[0]


ZOMBIE_CONTROLLER = Scenario(
    "zombie_controller",
    zombie_controller,
    "The controller is SIGSTOPped past its ZooKeeper session until another node is "
    "controller; meanwhile the leader or a follower (seeded) is killed, so the new "
    "controller elects or shrinks the ISR; then SIGCONT: the zombie's controller writes are "
    "fenced by the controller epoch and it sees the new controller. No acks=all record "
    "lost, none duplicated, no divergence below the HW. The unsafe configuration cannot "
    "lose to it either: the crash is a kill -9 (page cache kept) and acks=all waited for "
    "the whole ISR, so whoever the new controller elects holds every acknowledged record.",
    unsafe_loses=False,
)


# ---------------------------------------------------------------------------- double_failover


async def double_failover(run: ScenarioRun) -> None:
    """Leave A and B holding divergent tails past the HW, then bring both back: below the
    HW every replica must end identical (truncation by leader epoch).

    A leads while C is paused out of the ISR; A is killed with a tail B may not have; B leads
    and appends a tail of its own (acks=leader in the safe configuration, acks=all too in
    the unsafe one, where B acknowledges alone); B is killed; A restarts and C resumes. The
    safe configuration waits for B, the last ISR member; the unsafe one elects A unclean,
    so B's acknowledged tail is truncated away: the loss that configuration permits."""
    a = await run.leader_async()
    c = run.rng.choice(run.others(a))
    b = next(n for n in run.others(a) if n != c)
    await asyncio.to_thread(run.cluster.pause, c)
    run.note(f"node {c} (a follower) paused")
    await run.until(lambda: _isr_is(run, {a, b}), REJOIN_TIMEOUT_S, f"the ISR shrunk to {a},{b}")
    run.note(f"ISR shrunk to {sorted({a, b})}")
    await run.wait_acked(ACKS_BETWEEN_FAULTS)
    await asyncio.to_thread(run.cluster.kill, a)
    run.note(f"node {a} (leader A) killed")
    await elect_new_leader(run, {a, c})
    killed_a = time_of_last_note(run)
    await run.wait_acked(ACKS_BETWEEN_FAULTS)
    if run.cluster.unsafe:
        await run.until(
            lambda: _acked_all_since(run, killed_a), ELECTION_TIMEOUT_S, "an acks=all ack by B"
        )
    await asyncio.to_thread(run.cluster.kill, b)
    run.note(f"node {b} (leader B) killed")
    await restart(run, a)  # the first node back that can answer describe
    await run.until(lambda: _offline(run), ELECTION_TIMEOUT_S, "the partition offline")
    run.note("the partition is offline (B, the last ISR member, is down)")
    await asyncio.to_thread(run.cluster.resume, c)
    run.note(f"node {c} resumed")
    if run.cluster.unsafe:
        await elect_unclean(run, a)
    await restart(run, b)
    await back_in_sync(run)


def time_of_last_note(run: ScenarioRun) -> float:
    """The monotonic time of the last ``note`` (the fault just done)."""
    return run.started + run.timeline[-1][0]


def _isr_is(run: ScenarioRun, members: set[int]) -> bool:
    state = state_or_none(run)
    return state is not None and set(state["isr"]) == members


def _offline(run: ScenarioRun) -> bool:
    state = state_or_none(run)
    return state is not None and int(state["leader"]) < 0


def _acked_all_since(run: ScenarioRun, since_mono: float) -> bool:
    """Some acks=all attempt started after ``since_mono`` was acknowledged."""
    return any(
        a.acks == ACKS_ALL and a.outcome == OK and a.start_mono > since_mono
        for a in run.workload.history.snapshot()
    )


async def elect_unclean(run: ScenarioRun, node: int) -> None:
    """The operator's unclean election of ``node`` (the unsafe configuration's last resort)."""
    await asyncio.to_thread(run.cluster.elect_unclean, run.stream, 0, node)
    run.note(f"node {node} elected unclean by the operator")
    await run.until(lambda: leader_or_none(run) == node, ELECTION_TIMEOUT_S, f"node {node} leading")
    await run.wait_acked(ACKS_BETWEEN_FAULTS)


DOUBLE_FAILOVER = Scenario(
    "double_failover",
    double_failover,
    "Divergent tails: a follower is paused out of the ISR, leader A is killed with a tail "
    "past the HW, B leads and appends its own tail, B is killed, A restarts and the paused "
    "follower resumes, then B restarts: after the heal every replica agrees below the HW "
    "(the divergent tails truncated by leader epoch), no acks=all record lost, none "
    "duplicated. Unsafe: B acknowledges acks=all alone (min ISR 1) and the operator elects "
    "A unclean, so B's acknowledged tail is truncated: acknowledged loss, as that "
    "configuration permits.",
    node_overrides=LAG_OVERRIDES,
)


# ---------------------------------------------------------------------------- power loss


async def power_loss_one(run: ScenarioRun) -> None:
    """One node (seeded: the leader or a follower) loses power; the others go on; it
    restarts with what its fsync policy made durable and fetches the rest back."""
    leader = await run.leader_async()
    target = run.rng.choice(run.cluster.node_ids)
    await power_loss(run, target, "the leader" if target == leader else "a follower")
    if target == leader:
        await elect_new_leader(run, {target})
    await run.wait_acked(ACKS_BETWEEN_FAULTS)
    await restart(run, target)
    await back_in_sync(run)


async def power_loss(run: ScenarioRun, node: int, role: str) -> None:
    faults = await asyncio.to_thread(run.cluster.power_loss, node)
    cuts = "; ".join(f"{f.kind} {f.path.name}: {f.detail}" for f in faults) or "nothing cut"
    run.note(f"node {node} ({role}) lost power: {cuts}")


POWER_LOSS_ONE = Scenario(
    "power_loss_one",
    power_loss_one,
    "One node (seeded: the leader or a follower) loses power (kill -9 and its unsynced "
    "writes lost, see disk_faults.lose_unsynced_tail), the others take writes, it restarts "
    "and fetches back what it lost: no acks=all record lost, none duplicated, replicas "
    "identical below the HW. The unsafe configuration cannot lose to it either: the ISR was "
    "full, acks=all waited for all of it, and the two other members keep their page cache.",
    unsafe_loses=False,
)


async def corrupt_replica(run: ScenarioRun) -> None:
    """One node (seeded: the leader or a follower) is killed and its log damaged before it
    restarts: one segment cut at a random byte and a few bytes flipped in a random batch
    (bit rot, a misdirected write). Recovery must find the damage by CRC and keep the
    replica out of the ISR until it has fetched back what it lost."""
    leader = await run.leader_async()
    target = run.rng.choice(run.cluster.node_ids)
    await asyncio.to_thread(run.cluster.kill, target)
    faults = await asyncio.to_thread(_damage_logs, run, target)
    cuts = "; ".join(f"{f.kind} {f.path.name}: {f.detail}" for f in faults) or "nothing"
    role = "the leader" if target == leader else "a follower"
    run.note(f"node {target} ({role}) killed, its log damaged: {cuts}")
    if target == leader:
        await elect_new_leader(run, {target})
    await run.wait_acked(ACKS_BETWEEN_FAULTS)
    await restart(run, target)
    await back_in_sync(run)


def _damage_logs(run: ScenarioRun, node: int) -> list[DiskFault]:
    """A truncated segment and flipped bytes in every partition of ``node`` (seeded)."""
    faults: list[DiskFault] = []
    for directory in run.cluster.partition_dirs(node, run.stream):
        faults.append(truncate_segment(directory, run.rng))
        faults.append(flip_bytes(directory, run.rng))
    return faults


CORRUPT_REPLICA = Scenario(
    "corrupt_replica",
    corrupt_replica,
    "One node (seeded: the leader or a follower) is killed, then one of its segments is cut "
    "at a random byte and a few bytes of a random batch are flipped before it restarts: "
    "recovery finds the damage (CRC), the replica leaves the ISR and fetches back what it "
    "lost; no acks=all record lost, none duplicated, replicas identical below the HW. The "
    "unsafe configuration cannot lose to it either: the two undamaged members hold every "
    "acknowledged record.",
    unsafe_loses=False,
)


async def power_loss_last_isr(run: ScenarioRun) -> None:
    """Kill both followers so the leader is the ISR alone, let it take writes, cut its
    power, restart everyone: only what it fsynced survives on it."""
    last = await run.leader_async()
    for node in run.others(last):
        await asyncio.to_thread(run.cluster.kill, node)
        run.note(f"node {node} (a follower) killed")
    await run.until(lambda: _isr_is(run, {last}), REJOIN_TIMEOUT_S, f"the ISR shrunk to {last}")
    run.note(f"ISR is node {last} alone")
    shrunk = time_of_last_note(run)
    await run.wait_acked(ACKS_BETWEEN_FAULTS)
    if run.cluster.unsafe:
        await run.until(
            lambda: _acked_all_since(run, shrunk), ELECTION_TIMEOUT_S, "an acks=all ack alone"
        )
    await power_loss(run, last, "the last ISR member")
    await restart_all_and_recover(run)


async def restart_all_and_recover(run: ScenarioRun) -> None:
    """Restart every stopped node; then the controller elects, or nobody is electable (every
    ISR member lost durable data: ``recovery_loss``). Then the unsafe configuration's operator
    elects the replica with the most records unclean; the safe one leaves it offline."""
    for node in run.cluster.node_ids:
        if not run.cluster.node(node).is_running():
            await restart(run, node)
    await run.until(
        lambda: leader_or_none(run) is not None or _isr_lost_data(run),
        ELECTION_TIMEOUT_S,
        "a leader, or every ISR member reporting a recovery loss",
    )
    if leader_or_none(run) is not None:
        run.note(f"node {leader_or_none(run)} elected")
        return
    run.note("offline: every ISR member lost durable data at recovery")
    if run.cluster.unsafe:
        await elect_unclean(run, _longest_log(run))


def _isr_lost_data(run: ScenarioRun) -> bool:
    state = state_or_none(run)
    if state is None or int(state["leader"]) >= 0:
        return False
    return all(_view_or_empty(run, node).get("recovery_loss") for node in state["isr"])


def _view_or_empty(run: ScenarioRun, node: int) -> dict[str, Any]:
    try:
        return replica_view(run.cluster, node, run.stream)
    except ReplicaViewError:
        return {}


def _longest_log(run: ScenarioRun) -> int:
    """The replica with the highest LEO (the unclean candidate that loses the least)."""
    leos = {n: int(_view_or_empty(run, n).get("log_end_offset") or 0) for n in run.cluster.node_ids}
    return max(sorted(leos), key=lambda n: leos[n])


POWER_LOSS_LAST_ISR = Scenario(
    "power_loss_last_isr",
    power_loss_last_isr,
    "Both followers are killed, so the leader is the ISR alone and takes writes (acks=all "
    "is refused below min ISR 2 in the safe configuration); then it loses power and "
    "everyone restarts: no acks=all record lost (fsync=always made every acknowledged write "
    "durable), none duplicated, replicas identical below the HW. Unsafe: it acknowledged "
    "acks=all alone (min ISR 1) and fsync=never left those records in the page cache, which "
    "the power cut takes: acknowledged loss; the partition comes back only by the "
    "operator's unclean election when the last ISR member knows it lost durable data.",
)


async def power_loss_all(run: ScenarioRun) -> None:
    """Every node loses power at once (all killed first, then every disk loses what its
    fsync policy did not make durable); then all restart."""
    for node in run.cluster.node_ids:
        await asyncio.to_thread(run.cluster.kill, node)
    run.note("every node killed at once")
    for node in run.cluster.node_ids:
        await power_loss(run, node, "all nodes")
    await restart_all_and_recover(run)


POWER_LOSS_ALL = Scenario(
    "power_loss_all",
    power_loss_all,
    "Every node loses power at once, then all restart: with fsync=always no acks=all record "
    "is lost (each was fsynced on every ISR member before its ack; only a last, "
    "unacknowledged write may be torn), none duplicated, replicas identical below the HW. "
    "Unsafe (fsync=never): the page cache of every node is gone, so every disk ends at its "
    "recovery point and acknowledged records are lost; when no ISR member is electable "
    "the operator elects the longest log unclean.",
)


# ---------------------------------------------------------------------------- full_disk


async def full_disk(run: ScenarioRun) -> None:
    """Fill the leader's disk while publishing; writes are refused with storage_error; free
    it: the replica retries by itself and takes writes again, nothing restarted."""
    leader = await run.leader_async()
    await asyncio.to_thread(run.cluster.fill_disk, leader)
    run.note(f"node {leader}'s disk (the leader) filled")
    await run.until(
        lambda: _storage_refusals(run) >= REFUSALS_WANTED,
        ELECTION_TIMEOUT_S,
        f"{REFUSALS_WANTED} storage_error refusals",
    )
    run.note(f"{_storage_refusals(run)} storage_error refusals; describe: {_storage_error(run)}")
    await asyncio.to_thread(run.cluster.free_disk, leader)
    run.note(f"node {leader}'s disk freed")
    await run.until(
        lambda: _stall_cleared(run, leader), ELECTION_TIMEOUT_S, "storage_error back to null"
    )
    run.note("storage_error is null again")
    await run.wait_acked(ACKS_BETWEEN_FAULTS)


def _stall_cleared(run: ScenarioRun, node: int) -> bool:
    """Neither describe nor ``node``'s own replica reports a storage error any more."""
    view = _view_or_empty(run, node)
    return bool(view) and view.get("storage_error") is None and _storage_error(run) is None


def _storage_refusals(run: ScenarioRun) -> int:
    return sum(a.error_code == STORAGE_ERROR for a in run.workload.history.snapshot())


def _storage_error(run: ScenarioRun) -> Any:
    """describe's ``storage_error`` for the partition (what the leader reports)."""
    state = state_or_none(run)
    return "unknown" if state is None else state.get("storage_error")


FULL_DISK = Scenario(
    "full_disk",
    full_disk,
    "The leader's data directory (a small tmpfs) is filled while publishing: writes are "
    "refused with storage_error; the disk is freed and the partition takes writes again by "
    "itself (describe's storage_error back to null, no restart): no acks=all record lost, "
    "none duplicated, replicas identical below the HW. The unsafe configuration cannot lose "
    "to it either: a write that hit ENOSPC was refused, never acknowledged, and no power is "
    "cut, so fsync=never loses nothing.",
    unsafe_loses=False,
    small_disks={node: SMALL_DISK_BYTES for node in (1, 2, 3)},
)


PROCESS_SCENARIOS: list[Scenario] = [
    LEADER_KILL_5X,
    ZOMBIE_LEADER,
    ZOMBIE_CONTROLLER,
    DOUBLE_FAILOVER,
    POWER_LOSS_ONE,
    POWER_LOSS_LAST_ISR,
    POWER_LOSS_ALL,
    CORRUPT_REPLICA,
    FULL_DISK,
]
