"""The controller against a real ZooKeeper: election, fencing, failover, leader/ISR changes.

Brokers are simulated by ZooKeeper sessions that register broker znodes: stopping a session
is a broker death (its ephemeral registration disappears at once). Controllers run on one
asyncio loop in a background thread, as they would inside an ingest node, so the test thread
can wait for conditions with ``wait_for`` while they work.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

import pytest

from coordinator import reassignment_store
from coordinator.brokers import (
    announce_shutdown,
    live_broker_epochs,
    register_broker,
    shutting_down_brokers,
)
from coordinator.controller import Controller
from coordinator.controller_election import (
    current_controller,
    read_controller_epoch,
    try_become_controller,
)
from coordinator.errors import (
    ControllerMovedError,
    ElectionNotNeededError,
    IneligibleReplicaError,
    InvalidIsrError,
    NotControllerError,
    VersionConflictError,
)
from coordinator.fencing import write_partition_state_fenced
from coordinator.isr import (
    bump_epoch_after_restart,
    leave_isr_for_data_loss,
    read_partition_state,
    update_isr,
)
from coordinator.streams import StreamStore
from coordinator.zk import ZkSession
from coordinator.znodes import (
    CONTROLLER_EPOCH_PATH,
    NO_LEADER,
    BrokerInfo,
    ControllerEpoch,
    PartitionState,
    broker_path,
    partition_state_path,
)
from spark_log.errors import NoReassignmentError, PartitionNotFoundError, StreamNotFoundError
from spark_log.stream_spec import StreamSpec
from tests.support.waiting import wait_for

T = TypeVar("T")
RUN_TIMEOUT_S = 30.0
CONTROLLER_BROKER_ID = 100  # a controller-only node: not a replica of anything
OFFLINE_MESSAGE = "is OFFLINE: no live in-sync replica; unclean election is disabled"


# -- harness ----------------------------------------------------------------------------------


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """An asyncio loop in a background thread: the ingest node's loop, for the controllers."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="controller-loop", daemon=True)
    thread.start()
    yield loop
    run(loop, loop.shutdown_default_executor())
    loop.call_soon_threadsafe(loop.stop)
    thread.join(RUN_TIMEOUT_S)
    loop.close()


def run(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run_coroutine_threadsafe(coro, loop).result(RUN_TIMEOUT_S)


@pytest.fixture
def make_controller(loop, make_zk_session) -> Iterator[Callable[..., Controller]]:
    """Start a Controller on a session of its own (or the given one); all stopped afterwards."""
    controllers: list[Controller] = []

    def make(broker_id: int = CONTROLLER_BROKER_ID, session: ZkSession | None = None):
        controller = Controller(session or make_zk_session(), broker_id)
        run(loop, controller.start())
        controllers.append(controller)
        return controller

    yield make
    for controller in controllers:
        run(loop, controller.stop())


@pytest.fixture
def start_broker(make_zk_session) -> Callable[[int], ZkSession]:
    """Register a broker on a session of its own; ``session.stop()`` is the broker's death."""

    def start(broker_id: int) -> ZkSession:
        session = make_zk_session()
        register_broker(session, broker_info(broker_id))
        return session

    return start


def broker_info(broker_id: int) -> BrokerInfo:
    return BrokerInfo(
        broker_id=broker_id,
        host="127.0.0.1",
        api_url=f"http://127.0.0.1:{9000 + broker_id}",
        nats_url="nats://127.0.0.1:4222",
        started_at_ms=1_700_000_000_000,
    )


def create_stream(
    session: ZkSession, name: str, partitions: int = 1, replication_factor: int = 3
) -> None:
    spec = StreamSpec(
        name=name, subject=name, partitions=partitions, replication_factor=replication_factor
    )
    StreamStore(session).create(spec)


def state_of(session: ZkSession, stream: str, partition: int = 0) -> PartitionState:
    return read_partition_state(session, stream, partition)[0]


def the_controller(controllers: list[Controller]) -> Controller | None:
    """The one acting controller, None unless exactly one acts."""
    acting = [c for c in controllers if c.is_controller]
    return acting[0] if len(acting) == 1 else None


# -- election and failover --------------------------------------------------------------------


def test_exactly_one_of_three_is_elected_and_a_clean_stop_hands_over(
    loop, zk_session, make_controller
):
    controllers = [make_controller(broker_id) for broker_id in (1, 2, 3)]

    first = wait_for(lambda: the_controller(controllers), message="one controller")

    assert first.controller_epoch == 1
    assert current_controller(zk_session) == (first.broker_id, 1)
    assert read_controller_epoch(zk_session) == (1, 0)  # created at 1 by the first election
    assert sum(c.is_controller for c in controllers) == 1
    assert all(c.controller_epoch is None for c in controllers if c is not first)

    rest = [c for c in controllers if c is not first]
    run(loop, first.stop())  # a clean stop frees the seat at once, no session timeout

    second = wait_for(lambda: the_controller(rest), message="a new controller after a stop")
    assert second.controller_epoch == 2
    assert current_controller(zk_session) == (second.broker_id, 2)
    assert read_controller_epoch(zk_session) == (2, 1)


def test_controller_session_loss_fails_over_with_a_higher_epoch(
    zk_session, make_zk_session, make_controller
):
    sessions = {broker_id: make_zk_session() for broker_id in (1, 2, 3)}
    controllers = [make_controller(b, session) for b, session in sessions.items()]
    epochs_seen = []

    for round_ in range(1, 4):
        alive = [c for c in controllers if sessions[c.broker_id].connected]
        current = wait_for(lambda alive=alive: the_controller(alive), message=f"round {round_}")
        epochs_seen.append(current.controller_epoch)
        assert current_controller(zk_session) == (current.broker_id, current.controller_epoch)
        sessions[current.broker_id].stop()  # the controller's broker dies
        wait_for(lambda c=current: not c.is_controller, message="the old controller resigns")

    assert epochs_seen == [1, 2, 3]
    wait_for(lambda: current_controller(zk_session) is None, message="no controller left")


# -- fencing ----------------------------------------------------------------------------------


def test_a_deposed_controllers_fenced_write_fails(zk_session, make_zk_session, start_broker):
    for broker_id in (1, 2):
        start_broker(broker_id)
    create_stream(zk_session, "fenced", replication_factor=2)
    fence = try_become_controller(zk_session, broker_id=1)
    assert fence is not None
    assert try_become_controller(make_zk_session(), broker_id=2) is None  # the seat is taken
    state, version = read_partition_state(zk_session, "fenced", 0)
    follower = state.replicas[1]

    shrunk, new_version = write_partition_state_fenced(
        zk_session, fence, "fenced", 0, dataclasses.replace(state, isr=(state.leader,)), version
    )
    assert (shrunk.controller_epoch, new_version) == (fence.controller_epoch, version + 1)
    assert read_partition_state(zk_session, "fenced", 0) == (shrunk, new_version)
    with pytest.raises(VersionConflictError):  # a stale state version, same controller
        write_partition_state_fenced(zk_session, fence, "fenced", 0, state, version)

    # A newer controller generation, behind this one's back.
    epoch_data, epoch_version = zk_session.get_json(CONTROLLER_EPOCH_PATH)
    newer = ControllerEpoch(ControllerEpoch.from_json(epoch_data).controller_epoch + 1)
    zk_session.set_json(CONTROLLER_EPOCH_PATH, newer.to_json(), epoch_version)
    restored = dataclasses.replace(shrunk, isr=(state.leader, follower))

    with pytest.raises(ControllerMovedError) as raised:
        write_partition_state_fenced(zk_session, fence, "fenced", 0, restored, new_version)

    assert raised.value.code == "controller_moved"
    assert read_partition_state(zk_session, "fenced", 0) == (shrunk, new_version)


def test_a_deposed_controller_resigns_and_its_write_never_lands(
    zk_session, start_broker, make_controller
):
    brokers = {broker_id: start_broker(broker_id) for broker_id in (1, 2, 3)}
    create_stream(zk_session, "zombie")
    controller = make_controller()
    wait_for(lambda: controller.controller_epoch == 1, message="controller elected")
    before = state_of(zk_session, "zombie")
    epoch_data, epoch_version = zk_session.get_json(CONTROLLER_EPOCH_PATH)
    assert ControllerEpoch.from_json(epoch_data).controller_epoch == 1
    zk_session.set_json(CONTROLLER_EPOCH_PATH, ControllerEpoch(7).to_json(), epoch_version)

    brokers[before.leader].stop()  # the controller must write, and its epoch-1 write fails

    after = wait_for(
        lambda: (s := state_of(zk_session, "zombie")).leader != before.leader and s,
        message="a new leader",
    )
    # Written by the controller's next generation (8: it resigned, freed the seat and won
    # again above the bumped epoch); the fenced epoch-1 write never landed, so only one
    # leader election happened.
    assert after.controller_epoch == 8
    assert after.leader_epoch == before.leader_epoch + 1
    assert controller.controller_epoch == 8
    assert current_controller(zk_session) == (CONTROLLER_BROKER_ID, 8)


# -- broker failures --------------------------------------------------------------------------


def test_leader_death_elects_the_next_live_isr_member(zk_session, start_broker, make_controller):
    brokers = {broker_id: start_broker(broker_id) for broker_id in (1, 2, 3)}
    create_stream(zk_session, "orders")
    controller = make_controller()
    wait_for(lambda: controller.is_controller, message="controller elected")
    before = state_of(zk_session, "orders")

    brokers[before.leader].stop()

    after = wait_for(
        lambda: (s := state_of(zk_session, "orders")).leader != before.leader and s,
        message="a new leader",
    )
    survivors = tuple(b for b in before.replicas if b != before.leader)
    assert after.leader == survivors[0]  # the first live ISR member in replica order
    assert after.leader_epoch == before.leader_epoch + 1
    assert set(after.isr) == set(survivors)
    assert after.replicas == before.replicas
    assert after.controller_epoch == controller.controller_epoch


def test_follower_death_shrinks_the_isr_and_keeps_the_leader(
    zk_session, start_broker, make_controller
):
    brokers = {broker_id: start_broker(broker_id) for broker_id in (1, 2, 3)}
    create_stream(zk_session, "orders")
    controller = make_controller()
    wait_for(lambda: controller.is_controller, message="controller elected")
    before = state_of(zk_session, "orders")
    follower = before.replicas[-1]

    brokers[follower].stop()

    after = wait_for(
        lambda: follower not in (s := state_of(zk_session, "orders")).isr and s,
        message="the ISR shrunk",
    )
    assert after.leader == before.leader
    assert after.leader_epoch == before.leader_epoch
    assert set(after.isr) == set(before.isr) - {follower}


def test_a_restarted_leader_is_a_new_incarnation_and_loses_leadership(
    zk_session, make_zk_session, start_broker, make_controller, caplog
):
    caplog.set_level(logging.INFO, logger="liftlog.controller")
    brokers = {broker_id: start_broker(broker_id) for broker_id in (1, 2, 3)}
    create_stream(zk_session, "bounce")
    controller = make_controller()
    wait_for(lambda: controller.is_controller, message="controller elected")
    wait_for(lambda: "live brokers [1, 2, 3]" in caplog.text, message="the first scan")
    before = state_of(zk_session, "bounce")
    old_epoch = live_broker_epochs(zk_session)[before.leader]

    # The leader restarts so fast that the broker list never changes: the old registration
    # is replaced by the new incarnation's in one transaction. Only its epoch tells.
    reborn = make_zk_session()
    path = broker_path(before.leader)
    info = broker_info(before.leader).to_json()
    reborn.transaction().delete(path).create_json(path, info, ephemeral=True).commit()
    brokers[before.leader].stop()

    assert live_broker_epochs(zk_session)[before.leader] > old_epoch
    after = wait_for(
        lambda: (s := state_of(zk_session, "bounce")).leader != before.leader and s,
        message="leadership moved off the restarted broker",
    )
    assert sorted(live_broker_epochs(zk_session)) == [1, 2, 3]
    assert before.leader not in after.isr  # it must catch up again before it counts
    assert after.leader_epoch == before.leader_epoch + 1
    assert f"restarted [{before.leader}]" in caplog.text


def test_all_isr_dead_is_offline_and_an_isr_member_brings_it_back(
    loop, zk_session, start_broker, make_controller, caplog
):
    caplog.set_level(logging.INFO, logger="liftlog.controller")
    brokers = {broker_id: start_broker(broker_id) for broker_id in (1, 2, 3)}
    create_stream(zk_session, "fragile", replication_factor=2)
    controller = make_controller()
    wait_for(lambda: controller.is_controller, message="controller elected")
    first, second = state_of(zk_session, "fragile").replicas

    brokers[first].stop()
    wait_for(lambda: state_of(zk_session, "fragile").isr == (second,), message="isr [second]")
    brokers[first] = start_broker(first)  # live again, but out of sync
    brokers[second].stop()

    offline = wait_for(
        lambda: (s := state_of(zk_session, "fragile")).leader == NO_LEADER and s,
        message="offline",
    )
    assert offline.isr == (second,)  # kept: the last member in sync can lead again
    assert offline.leader_epoch == 2
    wait_for(lambda: OFFLINE_MESSAGE in caplog.text, message="the OFFLINE error log")
    # Never a replica outside the ISR: the live `first` is not elected, however often asked.
    result = run(loop, controller.rescan())
    assert result.offline == [("fragile", 0)]
    assert result.changes == ()
    assert state_of(zk_session, "fragile") == offline

    brokers[second] = start_broker(second)

    back = wait_for(
        lambda: (s := state_of(zk_session, "fragile")).leader == second and s,
        message="back online",
    )
    assert back.leader_epoch == 3
    assert back.isr == (second,)
    election_logs = [r for r in caplog.records if "leader election" in r.getMessage()]
    assert election_logs and all(r.levelno == logging.INFO for r in election_logs)


def test_unclean_election_happens_only_through_the_explicit_call(
    loop, zk_session, start_broker, make_controller
):
    brokers = {broker_id: start_broker(broker_id) for broker_id in (1, 2)}
    create_stream(zk_session, "lossy", replication_factor=2)
    controller = make_controller()
    wait_for(lambda: controller.is_controller, message="controller elected")
    leader, follower = state_of(zk_session, "lossy").replicas
    with pytest.raises(ElectionNotNeededError):
        run(loop, controller.elect_unclean("lossy", 0))

    brokers[follower].stop()
    wait_for(lambda: state_of(zk_session, "lossy").isr == (leader,), message="isr [leader]")
    brokers[leader].stop()
    offline = wait_for(
        lambda: (s := state_of(zk_session, "lossy")).leader == NO_LEADER and s,
        message="offline",
    )
    brokers[follower] = start_broker(follower)  # out of sync: only an operator may elect it
    assert run(loop, controller.rescan()).offline == [("lossy", 0)]
    with pytest.raises(IneligibleReplicaError, match="is not live"):
        run(loop, controller.elect_unclean("lossy", 0, broker_id=leader))

    elected = run(loop, controller.elect_unclean("lossy", 0))

    assert elected.leader == follower
    assert elected.isr == (follower,)
    assert elected.leader_epoch == offline.leader_epoch + 1
    assert elected.controller_epoch == controller.controller_epoch
    assert state_of(zk_session, "lossy") == elected
    with pytest.raises(StreamNotFoundError):
        run(loop, controller.elect_unclean("missing", 0))


# -- controlled shutdown ----------------------------------------------------------------------


def test_controlled_shutdown_moves_leadership_off_the_broker(
    loop, zk_session, start_broker, make_controller
):
    for broker_id in (1, 2, 3):
        start_broker(broker_id)
    create_stream(zk_session, "solo", replication_factor=1)  # nobody else can lead it
    create_stream(zk_session, "pairs", partitions=3, replication_factor=2)
    controller = make_controller()
    bystander = make_controller(CONTROLLER_BROKER_ID + 1)
    wait_for(lambda: controller.is_controller, message="the first controller is elected")
    solo = state_of(zk_session, "solo")
    target = solo.leader
    before = StreamStore(zk_session).partition_states("pairs")
    with pytest.raises(NotControllerError):
        run(loop, bystander.controlled_shutdown(target))

    still_led = run(loop, controller.controlled_shutdown(target))

    assert still_led == 1  # "solo": it keeps leading, and the caller is told
    assert state_of(zk_session, "solo") == solo  # untouched: moving it would take it offline
    after = StreamStore(zk_session).partition_states("pairs")
    for partition, (old, _version) in before.items():
        new = after[partition][0]
        assert new.leader != target
        assert target not in new.isr
        if old.leader == target:
            assert new.leader == next(b for b in old.replicas if b != target)
            assert new.leader_epoch == old.leader_epoch + 1
        elif target in old.isr:
            assert new.leader == old.leader
            assert new.leader_epoch == old.leader_epoch
        else:
            assert new == old
    assert any(old.leader == target for old, _ in before.values())
    assert run(loop, controller.controlled_shutdown(target)) == 1  # idempotent


def test_controlled_shutdown_never_moves_leadership_to_a_broker_shutting_down(
    loop, zk_session, start_broker, make_controller
):
    sessions = {broker_id: start_broker(broker_id) for broker_id in (1, 2, 3)}
    create_stream(zk_session, "three")
    before = state_of(zk_session, "three")
    leader, second, third = before.replicas
    controller = make_controller()
    wait_for(lambda: controller.is_controller, message="the controller is elected")
    announce_shutdown(sessions[second], second)  # all three are stopping, second first

    assert run(loop, controller.controlled_shutdown(leader)) == 0
    moved = state_of(zk_session, "three")
    assert moved.leader == third  # not `second`, the preferred but stopping candidate
    announce_shutdown(sessions[third], third)
    assert run(loop, controller.controlled_shutdown(third)) == 1  # nobody left to take it
    assert state_of(zk_session, "three").leader == third

    sessions[third].stop()  # it stops: the partition goes offline, not to `second`
    wait_for(
        lambda: state_of(zk_session, "three").leader == NO_LEADER,
        RUN_TIMEOUT_S,
        message="offline rather than led by a broker that is shutting down",
    )


def test_a_shutdown_notice_marks_only_the_incarnation_that_wrote_it(
    zk_session, make_zk_session, start_broker
):
    old = start_broker(1)
    start_broker(2)
    announce_shutdown(old, 1)
    announce_shutdown(old, 1)  # idempotent on its own session
    assert shutting_down_brokers(zk_session, live_broker_epochs(zk_session)) == {1}
    old.stop()
    new = make_zk_session()
    register_broker(new, broker_info(1))
    assert shutting_down_brokers(zk_session, live_broker_epochs(zk_session)) == frozenset()


# -- a replica that lost durable data at recovery ---------------------------------------------


def test_a_replica_that_lost_data_takes_itself_out_of_the_isr(zk_session, start_broker):
    for broker_id in (1, 2, 3):
        start_broker(broker_id)
    create_stream(zk_session, "lossy")
    state, _version = read_partition_state(zk_session, "lossy", 0)
    leader, follower, _ = state.replicas

    after, after_version = leave_isr_for_data_loss(zk_session, "lossy", 0, follower)

    assert (after, after_version) == read_partition_state(zk_session, "lossy", 0)
    assert follower not in after.isr
    assert (after.leader, after.leader_epoch) == (leader, state.leader_epoch + 1)
    assert leave_isr_for_data_loss(zk_session, "lossy", 0, follower) == (after, after_version)
    offline, _ = leave_isr_for_data_loss(zk_session, "lossy", 0, leader)
    assert offline.leader == NO_LEADER
    assert leader not in offline.isr


# -- the leader's own ISR writes --------------------------------------------------------------


def test_a_restarted_leader_bumps_its_epoch_once(zk_session, start_broker):
    for broker_id in (1, 2, 3):
        start_broker(broker_id)
    create_stream(zk_session, "restarted")
    state, version = read_partition_state(zk_session, "restarted", 0)

    bumped, bumped_version = bump_epoch_after_restart(
        zk_session, "restarted", 0, state.leader, state.leader_epoch
    )

    assert bumped == dataclasses.replace(state, leader_epoch=state.leader_epoch + 1)
    assert bumped_version == version + 1
    assert read_partition_state(zk_session, "restarted", 0) == (bumped, bumped_version)
    # asked again about the epoch it led before: the state moved on, nothing is written
    again = bump_epoch_after_restart(zk_session, "restarted", 0, state.leader, state.leader_epoch)
    assert again == (bumped, bumped_version)
    follower = next(b for b in state.replicas if b != state.leader)
    assert bump_epoch_after_restart(zk_session, "restarted", 0, follower, bumped.leader_epoch) == (
        bumped,
        bumped_version,
    )


def test_an_unregistered_broker_does_not_rejoin_the_isr(zk_session, start_broker):
    """A follower whose session expired may still fetch; the leader's expansion skips it."""
    sessions = {broker_id: start_broker(broker_id) for broker_id in (1, 2, 3)}
    create_stream(zk_session, "eligible")
    state, version = read_partition_state(zk_session, "eligible", 0)
    leader, follower, gone = state.replicas
    shrunk, shrunk_version = update_isr(
        zk_session, "eligible", 0, state, version, [leader, follower]
    )
    sessions[gone].stop()  # its registration (an ephemeral znode) goes with its session

    kept, kept_version = update_isr(
        zk_session, "eligible", 0, shrunk, shrunk_version, [leader, follower, gone]
    )

    assert (kept, kept_version) == (shrunk, shrunk_version)  # nothing written
    assert read_partition_state(zk_session, "eligible", 0) == (shrunk, shrunk_version)
    sessions[gone] = start_broker(gone)
    grown, _ = update_isr(
        zk_session, "eligible", 0, shrunk, shrunk_version, [leader, follower, gone]
    )
    assert set(grown.isr) == {leader, follower, gone}


def test_leader_isr_update_is_a_conditional_write(zk_session, start_broker):
    for broker_id in (1, 2, 3):
        start_broker(broker_id)
    create_stream(zk_session, "isr")
    state, version = read_partition_state(zk_session, "isr", 0)
    leader, follower, lagging = state.replicas

    shrunk, shrunk_version = update_isr(zk_session, "isr", 0, state, version, [leader, follower])

    assert shrunk_version == version + 1
    assert shrunk == dataclasses.replace(state, isr=(leader, follower))
    assert read_partition_state(zk_session, "isr", 0) == (shrunk, shrunk_version)
    with pytest.raises(VersionConflictError):  # the znode moved since `version`
        update_isr(zk_session, "isr", 0, state, version, [leader])
    with pytest.raises(InvalidIsrError, match="must keep its leader"):
        update_isr(zk_session, "isr", 0, shrunk, shrunk_version, [follower])
    with pytest.raises(InvalidIsrError, match="distinct replicas"):
        update_isr(zk_session, "isr", 0, shrunk, shrunk_version, [leader, 42])

    # The controller moves leadership: the old leader's next ISR write must fail, and a
    # re-read tells it that it no longer leads (so it stops acknowledging).
    fence = try_become_controller(zk_session, broker_id=CONTROLLER_BROKER_ID)
    assert fence is not None
    moved = dataclasses.replace(
        shrunk, leader=follower, leader_epoch=shrunk.leader_epoch + 1, isr=(follower,)
    )
    write_partition_state_fenced(zk_session, fence, "isr", 0, moved, shrunk_version)
    with pytest.raises(VersionConflictError):
        update_isr(zk_session, "isr", 0, shrunk, shrunk_version, [leader, follower, lagging])
    current, _version = read_partition_state(zk_session, "isr", 0)
    assert current.leader == follower
    assert current.leader_epoch == shrunk.leader_epoch + 1

    with pytest.raises(StreamNotFoundError):
        read_partition_state(zk_session, "missing", 0)
    with pytest.raises(PartitionNotFoundError):
        read_partition_state(zk_session, "isr", 5)
    with pytest.raises(PartitionNotFoundError):
        update_isr(zk_session, "isr", 5, shrunk, 0, [leader])


# -- preferred-leader election and reassignment ------------------------------------------------


def test_preferred_election_waits_for_the_isr_then_moves_leadership_back(
    zk_session, start_broker, make_controller, loop
):
    brokers = {broker_id: start_broker(broker_id) for broker_id in (1, 2, 3)}
    create_stream(zk_session, "orders")
    controller = make_controller()
    wait_for(lambda: controller.is_controller, message="controller elected")
    preferred = state_of(zk_session, "orders").replicas[0]
    brokers[preferred].stop()
    moved = wait_for(
        lambda: (s := state_of(zk_session, "orders")).leader not in (preferred, -1) and s,
        message="leadership moved off the preferred replica",
    )
    brokers[preferred] = start_broker(preferred)
    wait_for(lambda: preferred in live_broker_epochs(zk_session), message="it is back")

    (refused,) = run(loop, controller.elect_preferred("orders"))
    assert not refused.elected and "not in the ISR" in (refused.reason or "")

    state, version = read_partition_state(zk_session, "orders", 0)
    update_isr(zk_session, "orders", 0, state, version, (*state.isr, preferred))  # caught up
    (outcome,) = run(loop, controller.elect_preferred("orders", 0))
    assert outcome.elected and outcome.reason is None
    after = state_of(zk_session, "orders")
    assert after.leader == preferred and after.leader_epoch == moved.leader_epoch + 1
    assert set(after.isr) == set(after.replicas)
    assert after.controller_epoch == controller.controller_epoch


def test_a_cancel_left_for_the_next_controller_moves_leadership_back_then_reverts(
    zk_session, start_broker, make_controller, loop
):
    brokers = {broker_id: start_broker(broker_id) for broker_id in (1, 2, 3)}
    create_stream(zk_session, "orders", replication_factor=2)
    first = make_controller()
    wait_for(lambda: first.is_controller, message="controller elected")
    original = state_of(zk_session, "orders").replicas
    (added,) = set(brokers) - set(original)
    reassignment_store.submit(zk_session, "orders", {0: [added, original[1]]})
    wait_for(
        lambda: state_of(zk_session, "orders").replicas == (*original, added),
        message="the added replica is assigned (it never fetches: the move waits on it)",
    )
    run(loop, first.stop())
    # What a controller deposed mid-move leaves: the added replica in sync and leading.
    state, version = read_partition_state(zk_session, "orders", 0)
    led_by_added = dataclasses.replace(
        state, leader=added, leader_epoch=state.leader_epoch + 1, isr=(*state.isr, added)
    )
    zk_session.set_json(partition_state_path("orders", 0), led_by_added.to_json(), version)
    (marked,) = reassignment_store.cancel(zk_session, "orders", 0)
    assert marked.cancelling and marked.original_replicas == original

    second = make_controller()
    wait_for(
        lambda: not reassignment_store.pending(zk_session, "orders"),
        message="the new controller finished the cancel",
    )
    after = state_of(zk_session, "orders")
    assert after.replicas == original and after.leader == original[0]
    assert set(after.isr) == set(original)
    assert after.leader_epoch == led_by_added.leader_epoch + 2  # leader back, then replicas
    assert after.controller_epoch == second.controller_epoch
    with pytest.raises(NoReassignmentError, match="no reassignment in progress"):
        reassignment_store.cancel(zk_session, "orders")
    with pytest.raises(PartitionNotFoundError):
        reassignment_store.cancel(zk_session, "orders", 5)
    with pytest.raises(StreamNotFoundError):
        reassignment_store.cancel(zk_session, "missing")
