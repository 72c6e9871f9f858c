"""The coordinator against a real ZooKeeper: brokers, streams, conditional writes, watches."""

from __future__ import annotations

import dataclasses
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from coordinator.brokers import deregister_broker, live_brokers, register_broker
from coordinator.errors import (
    BrokerIdInUseError,
    InvalidReplicationFactorError,
    VersionConflictError,
    ZkUnavailableError,
    ZNodeExistsError,
    ZNodeFormatError,
)
from coordinator.streams import StreamStore
from coordinator.zk import ZkSession
from coordinator.znodes import (
    BrokerInfo,
    PartitionState,
    StreamRecord,
    broker_path,
    partition_state_path,
    stream_path,
)
from liftlog.embedded import ChildProcess, free_port
from spark_log.errors import (
    InvalidRequestError,
    PartitionNotFoundError,
    StreamExistsError,
    StreamNotFoundError,
)
from spark_log.stream_spec import StreamSpec
from tests.support.paths import REPO
from tests.support.stacks import plain_stack_only
from tests.support.waiting import wait_for

CHILD_SESSION_TIMEOUT_S = 2.0
CHILD_REGISTERED_TIMEOUT_S = 30.0

# A broker in another process, so that killing it with SIGKILL is a real unclean stop: its
# session stays open on the server until it times out.
_BROKER_CHILD = """
import sys, threading
from coordinator.brokers import register_broker
from coordinator.zk import ZkSession
from coordinator.znodes import BrokerInfo
hosts, root, broker_id, timeout_s = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
session = ZkSession(hosts, root, timeout_s).start()
register_broker(session, BrokerInfo(broker_id, "old-host", "http://old:1", "nats://old:2", 1))
threading.Event().wait()
"""


def broker(broker_id: int, api_url: str | None = None) -> BrokerInfo:
    return BrokerInfo(
        broker_id=broker_id,
        host="127.0.0.1",
        api_url=api_url or f"http://127.0.0.1:{9000 + broker_id}",
        nats_url="nats://127.0.0.1:4222",
        started_at_ms=1_700_000_000_000,
    )


def register(session: ZkSession, *broker_ids: int) -> None:
    for broker_id in broker_ids:
        register_broker(session, broker(broker_id))


def broker_ids(session: ZkSession) -> list[int]:
    return [info.broker_id for info in live_brokers(session)]


# -- brokers --------------------------------------------------------------------------------


def test_broker_registration_is_ephemeral(zk_session, make_zk_session):
    other = make_zk_session()
    register_broker(other, broker(2))
    wait_for(lambda: broker_ids(zk_session) == [2], message="broker 2 registered")

    other.stop()

    wait_for(lambda: broker_ids(zk_session) == [], message="broker 2 gone with its session")


def test_live_brokers_are_sorted_by_id_and_carry_their_info(zk_session):
    register(zk_session, 3, 1, 2)

    brokers = live_brokers(zk_session)

    assert [b.broker_id for b in brokers] == [1, 2, 3]
    assert brokers[0] == broker(1)


def test_registering_again_on_the_same_session_is_idempotent(zk_session):
    register(zk_session, 1)
    register(zk_session, 1)
    assert broker_ids(zk_session) == [1]


def test_deregister_removes_only_its_own_registration(zk_session, make_zk_session):
    other = make_zk_session()
    register_broker(other, broker(1))
    register(zk_session, 2)

    deregister_broker(zk_session, 1)  # not ours: left alone
    deregister_broker(zk_session, 2)

    assert broker_ids(zk_session) == [1]


@plain_stack_only("the child broker connects to ZooKeeper without TLS or a digest identity")
def test_reregistration_after_an_unclean_stop_waits_for_the_old_session(
    zookeeper, zk_root, zk_session, temp_dir
):
    old = ChildProcess(
        "old broker",
        [sys.executable, "-c", _BROKER_CHILD, zookeeper.connect_string, zk_root, "1",
         str(CHILD_SESSION_TIMEOUT_S)],
        temp_dir / "old-broker.log",
        extra_env={"PYTHONPATH": str(REPO)},
    ).start()  # fmt: skip
    try:
        old.wait_ready(lambda: broker_ids(zk_session) == [1], CHILD_REGISTERED_TIMEOUT_S)
        old.kill()  # SIGKILL: the session stays open on the server until it times out
        assert zk_session.exists(broker_path(1))

        with pytest.raises(BrokerIdInUseError) as raised:
            register_broker(zk_session, broker(1), wait_s=0.1)
        assert "broker id 1" in str(raised.value)
        assert "http://old:1" in str(raised.value)

        register_broker(zk_session, broker(1), wait_s=5 * CHILD_SESSION_TIMEOUT_S)
    finally:
        old.stop()

    assert live_brokers(zk_session) == [broker(1)]
    assert zk_session.ephemeral_owner(broker_path(1)) == zk_session.session_id


# -- streams --------------------------------------------------------------------------------


def test_create_writes_the_stream_and_its_partition_states(zk_session):
    register(zk_session, 1, 2, 3)
    store = StreamStore(zk_session)
    spec = StreamSpec(name="orders", subject="orders.created", partitions=3, replication_factor=2)

    created, record = store.create(spec)

    assert created is True
    assert record.spec == spec
    assert record.paused is False
    assert store.get("orders") == record
    raw, _version = zk_session.get_json(stream_path("orders"))
    assert raw["version"] == 1
    assert raw["spec"] == spec.to_json()
    states = store.partition_states("orders")
    assert sorted(states) == [0, 1, 2]
    for state, version in states.values():
        assert version == 0
        assert len(state.replicas) == 2
        assert state.leader == state.replicas[0]
        assert state.isr == state.replicas
        assert state.leader_epoch == 0
        assert state.controller_epoch == 0
    leaders = {state.leader for state, _ in states.values()}
    assert leaders == {1, 2, 3}


def test_identical_create_is_idempotent(zk_session):
    register(zk_session, 1)
    store = StreamStore(zk_session)
    spec = StreamSpec(name="orders", subject="orders")
    _created, first = store.create(spec)

    created, again = store.create(StreamSpec(name="orders", subject="orders"))

    assert created is False
    assert again == first


def test_conflicting_create_names_the_differing_fields(zk_session):
    register(zk_session, 1)
    store = StreamStore(zk_session)
    store.create(StreamSpec(name="orders", subject="orders"))

    with pytest.raises(StreamExistsError) as raised:
        store.create(StreamSpec(name="orders", subject="orders", partitions=2))

    message = str(raised.value)
    assert "partitions (existing 1, requested 2)" in message
    assert "subject" not in message
    assert raised.value.code == "stream_exists"


def test_concurrent_creates_from_two_sessions_create_exactly_once(zk_session, make_zk_session):
    register(zk_session, 1, 2)
    racers = [StreamStore(make_zk_session()), StreamStore(make_zk_session())]
    for round_ in range(5):
        spec = StreamSpec(name=f"race-{round_}", subject=f"race.{round_}", partitions=8)
        barrier = threading.Barrier(len(racers))

        def create(store: StreamStore, spec: StreamSpec = spec, barrier=barrier):
            barrier.wait()
            return store.create(spec)

        with ThreadPoolExecutor(len(racers)) as pool:
            results = [f.result() for f in [pool.submit(create, s) for s in racers]]

        assert sorted(created for created, _ in results) == [False, True]
        assert results[0][1] == results[1][1]
        assert len(StreamStore(zk_session).partition_states(spec.name)) == 8


def test_list_get_and_delete(zk_session):
    register(zk_session, 1)
    store = StreamStore(zk_session)
    assert store.list() == []
    for name in ("b-stream", "a-stream"):
        store.create(StreamSpec(name=name, subject=name))

    assert [r.name for r in store.list()] == ["a-stream", "b-stream"]
    assert store.get("a-stream").spec.subject == "a-stream"

    store.delete("a-stream")

    assert [r.name for r in store.list()] == ["b-stream"]
    assert not zk_session.exists(stream_path("a-stream"))
    with pytest.raises(StreamNotFoundError):
        store.get("a-stream")
    with pytest.raises(StreamNotFoundError):
        store.delete("a-stream")
    with pytest.raises(StreamNotFoundError):
        store.partition_states("a-stream")


def test_invalid_names_never_reach_zookeeper(zk_session):
    with pytest.raises(InvalidRequestError):
        StreamStore(zk_session).get("../brokers")


def test_set_paused_is_stored(zk_session):
    register(zk_session, 1)
    store = StreamStore(zk_session)
    store.create(StreamSpec(name="orders", subject="orders"))

    assert store.set_paused("orders", True).paused is True
    assert store.get("orders").paused is True
    assert store.set_paused("orders", True).paused is True  # no change, no error
    assert store.set_paused("orders", False).paused is False
    with pytest.raises(StreamNotFoundError):
        store.set_paused("missing", True)


def test_partition_state_write_with_a_stale_version_is_refused(zk_session):
    register(zk_session, 1, 2)
    store = StreamStore(zk_session)
    store.create(StreamSpec(name="orders", subject="orders", replication_factor=2))
    state, version = store.partition_states("orders")[0]
    shrunk = dataclasses.replace(state, isr=state.isr[:1], leader_epoch=state.leader_epoch + 1)

    new_version = store.set_partition_state("orders", 0, shrunk, version)

    assert new_version == version + 1
    assert store.partition_states("orders")[0] == (shrunk, new_version)
    with pytest.raises(VersionConflictError) as raised:
        store.set_partition_state("orders", 0, state, version)
    assert raised.value.code == "version_conflict"
    assert store.partition_states("orders")[0] == (shrunk, new_version)
    with pytest.raises(PartitionNotFoundError):
        store.set_partition_state("orders", 5, state, 0)
    with pytest.raises(StreamNotFoundError):
        store.set_partition_state("missing", 0, state, 0)


def test_replication_factor_larger_than_live_brokers_is_refused(zk_session):
    register(zk_session, 1)
    store = StreamStore(zk_session)

    with pytest.raises(InvalidReplicationFactorError) as raised:
        store.create(StreamSpec(name="orders", subject="orders", replication_factor=3))

    assert "replication factor 3 larger than available brokers 1" in str(raised.value)
    assert store.list() == []


def test_watch_fires_on_create_pause_state_change_and_delete(zk_session):
    register(zk_session, 1)
    store = StreamStore(zk_session)
    store.create(StreamSpec(name="before", subject="before"))
    calls: list[int] = []
    watch = store.watch(lambda: calls.append(1))

    def after(action, what):
        seen = len(calls)
        action()
        wait_for(lambda: len(calls) > seen, message=f"a watch callback after {what}")

    try:
        assert calls, "the callback runs once when the watch is set"
        state, version = store.partition_states("before")[0]
        bumped = dataclasses.replace(state, leader_epoch=1)
        after(lambda: store.set_partition_state("before", 0, bumped, version), "state change")
        after(lambda: store.create(StreamSpec(name="after", subject="after")), "create")
        state, version = store.partition_states("after")[0]
        bumped = dataclasses.replace(state, leader_epoch=1)
        after(lambda: store.set_partition_state("after", 0, bumped, version), "new stream state")
        after(lambda: store.set_paused("after", True), "pause")
        after(lambda: store.delete("after"), "delete")
        after(lambda: store.create(StreamSpec(name="after", subject="after")), "re-create")
        state, version = store.partition_states("after")[0]
        bumped = dataclasses.replace(state, leader_epoch=1)
        after(lambda: store.set_partition_state("after", 0, bumped, version), "re-created state")
    finally:
        watch.cancel()


# -- the adapter ----------------------------------------------------------------------------


def test_conditional_write_and_transactions_are_typed(zk_session):
    zk_session.create_json("/a", {"n": 1})
    data, version = zk_session.get_json("/a")
    assert data == {"n": 1}
    zk_session.set_json("/a", {"n": 2}, version)
    with pytest.raises(VersionConflictError):
        zk_session.set_json("/a", {"n": 3}, version)
    with pytest.raises(ZNodeExistsError):
        zk_session.create_json("/a", {"n": 4})

    txn = zk_session.transaction().create_json("/b", {"n": 1}).create_json("/a", {"n": 5})
    with pytest.raises(ZNodeExistsError, match="/a"):
        txn.commit()
    assert not zk_session.exists("/b")  # all or nothing
    assert zk_session.get_json("/a")[0] == {"n": 2}


def test_state_listener_hears_the_session_end(make_zk_session):
    session = make_zk_session()
    states: list[str] = []
    session.add_state_listener(states.append)

    session.stop()

    wait_for(lambda: "lost" in states, message="'lost' after stop")


def test_unreachable_zookeeper_is_unavailable():
    session = ZkSession(f"127.0.0.1:{free_port()}", "/liftlog-nowhere", 2.0)
    with pytest.raises(ZkUnavailableError) as raised:
        session.start(timeout_s=0.5)
    assert raised.value.code == "unavailable"


def test_znode_json_round_trips_and_refuses_unknown_versions():
    state = PartitionState(leader=1, leader_epoch=2, isr=(1,), replicas=(1, 2), controller_epoch=0)
    record = StreamRecord(StreamSpec(name="s", subject="s"), paused=True, created_at_ms=5)
    for value in (state, record, broker(1)):
        assert type(value).from_json(value.to_json()) == value
        assert value.to_json()["version"] == 1
        with pytest.raises(ZNodeFormatError, match="unsupported schema version 2"):
            type(value).from_json({**value.to_json(), "version": 2})
        with pytest.raises(ZNodeFormatError, match="unknown key"):
            type(value).from_json({**value.to_json(), "surprise": 1})
    with pytest.raises(ZNodeFormatError, match="isr"):
        PartitionState(leader=1, leader_epoch=0, isr=(3,), replicas=(1, 2), controller_epoch=0)


def test_partition_state_path_layout():
    assert partition_state_path("orders", 3) == "/v1/streams/orders/partitions/3/state"
    assert broker_path(7) == "/v1/brokers/ids/7"
