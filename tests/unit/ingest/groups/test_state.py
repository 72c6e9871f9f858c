"""``GroupState``: joins, cooperative reconciliation, expiry, commit fencing and the record.

Time is a plain integer and member ids come from a counter, so every scenario is exact. The
simulations model clients the way the group consumer behaves: a client consumes what its last
answer assigned plus what it is revoking, commits and stops the revoked ones before its next
heartbeat, and then reports only what it still owns. At every step no partition may be owned
by two live clients.
"""

from __future__ import annotations

import itertools
import json
import random

import pytest

from ingest.groups.state import GroupLimits, GroupState, MemberView
from spark_log.errors import (
    CorruptRecordError,
    FencedMemberError,
    GroupNotEmptyError,
    InvalidRequestError,
    StaleMemberEpochError,
)

T0 = 1_700_000_000_000
SESSION = 10_000


def _state(counts: dict[str, int] | None = None) -> GroupState:
    ids = (f"m{i}" for i in itertools.count())
    state = GroupState("billing", id_factory=lambda: next(ids))
    state.set_partition_counts(counts or {"orders": 6})
    return state


def _pairs(by_stream: dict[str, list[int]]) -> set[tuple[str, int]]:
    return {(s, p) for s, ps in by_stream.items() for p in ps}


def _by_stream(pairs: set[tuple[str, int]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for s, p in sorted(pairs):
        out.setdefault(s, []).append(p)
    return out


class Client:
    """A group consumer as the coordinator sees it (see the module docstring)."""

    def __init__(self, view: MemberView) -> None:
        self.member_id = view.member_id
        self.apply(view)

    def apply(self, view: MemberView) -> None:
        self.epoch = view.member_epoch
        self.consuming = _pairs(view.assigned) | _pairs(view.revoking)
        self.releasing = _pairs(view.revoking)

    def heartbeat(self, state: GroupState, now_ms: int) -> MemberView:
        self.consuming -= self.releasing  # committed and stopped since the last answer
        view = state.heartbeat(self.member_id, self.epoch, _by_stream(self.consuming), now_ms)
        self.apply(view)
        return view


def _join(state: GroupState, now_ms: int = T0, streams: tuple[str, ...] = ("orders",)) -> Client:
    return Client(state.join(None, None, streams, SESSION, now_ms))


def _assert_exclusive(state: GroupState, clients: list[Client]) -> None:
    seen: dict[tuple[str, int], str] = {}
    for client in clients:
        for tp in client.consuming:
            assert tp not in seen, f"{tp} consumed by {seen[tp]} and {client.member_id}"
            seen[tp] = client.member_id
    held = [tp for m in state.members.values() for tp in m.held()]
    assert len(held) == len(set(held)), "a partition held by two members"


def _rounds(state: GroupState, clients: list[Client], now_ms: int, rounds: int = 4) -> None:
    for _ in range(rounds):
        for client in clients:
            client.heartbeat(state, now_ms)
            _assert_exclusive(state, clients)


def _owners(clients: list[Client]) -> dict[tuple[str, int], str]:
    return {tp: c.member_id for c in clients for tp in c.consuming}


def test_first_member_gets_everything_at_the_first_epoch() -> None:
    state = _state()
    view = state.join(None, None, ["orders"], SESSION, T0)
    assert view.member_id == "m0"
    assert (view.member_epoch, view.group_epoch) == (2, 2)  # 1 was the partition counts
    assert view.assigned == {"orders": [0, 1, 2, 3, 4, 5]}
    assert view.revoking == view.pending == {}
    assert view.heartbeat_interval_ms == SESSION // 3  # below the 5 s default
    assert state.members["m0"].session_timeout_ms == SESSION


def test_fourth_member_gets_only_moved_partitions_and_nothing_is_owned_twice() -> None:
    state = _state()
    clients = [_join(state) for _ in range(3)]
    _rounds(state, clients, T0)
    before = _owners(clients)
    assert sorted(len(c.consuming) for c in clients) == [2, 2, 2]
    clients.append(Client(state.join(None, None, ["orders"], SESSION, T0)))
    assert clients[-1].consuming == set(), "the newcomer waits for the revocations"
    _rounds(state, clients, T0)
    after = _owners(clients)
    assert sorted(after) == [("orders", p) for p in range(6)]
    moved = {tp for tp in before if after[tp] != before[tp]}
    # quotas 2, 2, 1, 1: one partition moves, to the newcomer (ceil(6 / 4) = 2 at most)
    assert len(moved) == 1 and all(after[tp] == "m3" for tp in moved)
    assert sorted(len(c.consuming) for c in clients) == [1, 1, 2, 2]
    assert {c.epoch for c in clients} == {state.group_epoch}


def test_expired_member_partitions_move_to_the_survivors() -> None:
    state = _state()
    clients = [_join(state) for _ in range(3)]
    _rounds(state, clients, T0)
    dead = clients.pop(1)
    _rounds(state, clients, T0 + SESSION - 1)
    assert state.expire(T0 + SESSION) == [dead.member_id]
    _rounds(state, clients, T0 + SESSION)
    assert sorted(_owners(clients)) == [("orders", p) for p in range(6)]
    assert sorted(len(c.consuming) for c in clients) == [3, 3]
    with pytest.raises(FencedMemberError):
        dead.heartbeat(state, T0 + SESSION)


def test_leave_frees_partitions_at_once() -> None:
    state = _state()
    clients = [_join(state) for _ in range(2)]
    _rounds(state, clients, T0)
    epoch = state.group_epoch
    state.leave(clients[0].member_id)
    assert state.group_epoch == epoch + 1
    assert clients[1].heartbeat(state, T0).assigned == {"orders": [0, 1, 2, 3, 4, 5]}
    with pytest.raises(FencedMemberError):
        state.leave(clients[0].member_id)


def test_a_revoking_partition_is_never_handed_out() -> None:
    state = _state({"orders": 2})
    a = _join(state)
    b = _join(state)
    assert b.consuming == set() and state.target["m1"] == {("orders", 1)}
    view = a.heartbeat(state, T0)
    assert view.revoking == {"orders": [1]} and view.member_epoch == 2  # old epoch until acked
    assert b.heartbeat(state, T0).pending == {"orders": [1]}
    a.heartbeat(state, T0)  # ack: no longer lists 1
    assert a.epoch == 3
    assert b.heartbeat(state, T0).assigned == {"orders": [1]}


def test_random_histories_never_own_a_partition_twice_and_converge() -> None:
    for seed in range(100):
        rng = random.Random(seed)
        state = _state({"orders": rng.randint(1, 8), "audit": rng.randint(0, 3)})
        clients: list[Client] = []
        now = T0
        for _ in range(30):
            op = rng.random()
            if op < 0.25 or not clients:
                streams = rng.choice([("orders",), ("orders", "audit"), ("audit",)])
                clients.append(_join(state, now, streams))
            elif op < 0.35:
                state.leave(clients.pop(rng.randrange(len(clients))).member_id)
            elif op < 0.42:
                dead = clients.pop(rng.randrange(len(clients)))
                for client in clients:
                    client.heartbeat(state, now + SESSION - 1)
                now += SESSION
                assert state.expire(now) == [dead.member_id]
            elif op < 0.47:
                counts = dict(state.partition_counts)
                counts["orders"] = counts.get("orders", 0) + rng.randint(0, 2)
                state.set_partition_counts(counts)
            else:
                rng.choice(clients).heartbeat(state, now)
            _assert_exclusive(state, clients)
        _rounds(state, clients, now)
        for client in clients:
            view = client.heartbeat(state, now)
            assert view.pending == view.revoking == {}, (seed, view)
            assert client.epoch == state.group_epoch


def test_commit_fencing() -> None:
    state = _state({"orders": 2})
    a = _join(state)
    with pytest.raises(FencedMemberError):
        state.validate_commit("nobody", 2, [("orders", 0)])
    state.validate_commit(a.member_id, 2, [("orders", 0), ("orders", 1)])
    with pytest.raises(StaleMemberEpochError):
        state.validate_commit(a.member_id, 3, [("orders", 0)])  # newer than the member's epoch
    with pytest.raises(StaleMemberEpochError):
        state.validate_commit(a.member_id, 1, [("orders", 0)])  # before it was assigned
    b = _join(state)
    a.heartbeat(state, T0)  # partition 1 now revoking, a still at epoch 2
    state.validate_commit(a.member_id, 2, [("orders", 1)])  # a revoking partition may commit
    a.heartbeat(state, T0)  # acked: a moves to epoch 3 and keeps partition 0
    with pytest.raises(StaleMemberEpochError):
        state.validate_commit(a.member_id, 3, [("orders", 1)])  # no longer held
    # KIP-1251: a commit still carrying epoch 2 for a partition held since 2 is valid
    state.validate_commit(a.member_id, 2, [("orders", 0)])
    b.heartbeat(state, T0)
    state.validate_commit(b.member_id, 3, [("orders", 1)])
    with pytest.raises(StaleMemberEpochError):
        state.validate_commit(b.member_id, 2, [("orders", 1)])


def test_heartbeat_fencing() -> None:
    state = _state({"orders": 2})
    a = _join(state)
    with pytest.raises(FencedMemberError):
        state.heartbeat("nobody", 2, {}, T0)
    with pytest.raises(FencedMemberError):
        state.heartbeat(a.member_id, a.epoch + 1, {}, T0)
    _join(state)  # partition 1 moves to the newcomer
    view = state.heartbeat(a.member_id, a.epoch, {"orders": [0, 1, 7]}, T0)  # 7: no such one
    assert view.revoking == {"orders": [1]} and view.member_epoch == 2
    view = state.heartbeat(a.member_id, 1, {"orders": [0, 1]}, T0)  # an older epoch: answered
    assert view.revoking == {"orders": [1]}
    view = state.heartbeat(a.member_id, 2, {"orders": [0]}, T0)
    assert view.member_epoch == 3
    with pytest.raises(FencedMemberError):
        state.heartbeat(a.member_id, 3, {"orders": [0, 1]}, T0)  # 1 is no longer its own


def test_session_timeouts_are_bounded_and_set_the_heartbeat_interval() -> None:
    state = _state()
    with pytest.raises(InvalidRequestError):
        state.join(None, None, ["orders"], 2_999, T0)
    with pytest.raises(InvalidRequestError):
        state.join(None, None, ["orders"], 300_001, T0)
    with pytest.raises(InvalidRequestError):
        state.join(None, None, [], None, T0)
    assert state.join(None, None, ["orders"], 3_000, T0).heartbeat_interval_ms == 1_000
    assert state.join(None, None, ["orders"], None, T0).heartbeat_interval_ms == 5_000
    assert state.members["m1"].session_timeout_ms == 45_000
    assert state.next_deadline_ms() == T0 + 3_000
    assert state.expire(T0 + 2_999) == []
    assert state.expire(T0 + 3_000) == ["m0"]


def test_partition_growth_and_stream_deletion() -> None:
    state = _state({"orders": 2, "audit": 2})
    clients = [_join(state, streams=("orders", "audit")) for _ in range(2)]
    _rounds(state, clients, T0)
    epoch = state.group_epoch
    assert not state.set_partition_counts({"orders": 2, "audit": 2})
    assert state.set_partition_counts({"orders": 4, "audit": 2})
    assert state.group_epoch == epoch + 1
    before = _owners(clients)
    _rounds(state, clients, T0)
    after = _owners(clients)
    assert all(after[tp] == owner for tp, owner in before.items()), "growth moves nothing"
    assert sorted(tp for tp in after if tp[0] == "orders") == [("orders", p) for p in range(4)]
    state.set_partition_counts({"orders": 4})  # audit deleted: dropped, nothing to revoke
    assert all(tp[0] == "orders" for m in state.members.values() for tp in m.held())
    _rounds(state, clients, T0)  # clients still listing audit partitions are not fenced
    assert sorted(_owners(clients)) == [("orders", p) for p in range(4)]


def test_rejoin_with_a_known_id_starts_over_with_the_sticky_target() -> None:
    state = _state()
    clients = [_join(state) for _ in range(2)]
    _rounds(state, clients, T0)
    had = clients[0].consuming
    epoch = state.group_epoch
    view = state.join(clients[0].member_id, None, ["orders"], SESSION, T0)
    assert _pairs(view.assigned) == had and state.group_epoch == epoch
    state.validate_commit(view.member_id, view.member_epoch, sorted(had))
    assert state.join("chosen-id", None, ["orders"], SESSION, T0).member_id == "chosen-id"


def test_static_member_restart_keeps_its_slot_without_a_rebalance() -> None:
    state = _state()
    a = Client(state.join(None, "host-a", ["orders"], SESSION, T0))
    b = _join(state)
    _rounds(state, [a, b], T0)
    epoch = state.group_epoch
    view = state.join(None, "host-a", ["orders"], SESSION, T0 + 1_000)
    assert view.member_id != a.member_id and state.group_epoch == epoch
    assert _pairs(view.assigned) == a.consuming
    with pytest.raises(FencedMemberError):
        a.heartbeat(state, T0 + 1_000)
    with pytest.raises(InvalidRequestError):
        state.join(b.member_id, "host-a", ["orders"], SESSION, T0 + 1_000)
    # once its session is over, the same instance id joins as a new member (a rebalance)
    b.heartbeat(state, T0 + 1_000 + SESSION)
    fresh = state.join(None, "host-a", ["orders"], SESSION, T0 + 1_000 + SESSION)
    assert fresh.member_id not in (a.member_id, view.member_id)
    assert state.group_epoch > epoch and len(state.members) == 2


def test_record_round_trip_restarts_every_session() -> None:
    state = _state({"orders": 3})
    a = _join(state)
    _join(state)
    a.heartbeat(state, T0)  # leaves a partition revoking
    record = json.loads(json.dumps(state.to_json()))
    assert record["v"] == 1 and record["group"] == "billing"
    assert record["members"][0]["revoking"] == {"orders": [2]}
    loaded = GroupState.from_json(record, now_ms=T0 + 5_000)
    assert loaded.to_json() == record
    assert loaded.expire(T0 + 5_000 + SESSION - 1) == []
    assert loaded.expire(T0 + 5_000 + SESSION) == ["m0", "m1"]
    with pytest.raises(CorruptRecordError):
        GroupState.from_json({**record, "v": 2}, now_ms=T0)
    with pytest.raises(CorruptRecordError):
        GroupState.from_json({"v": 1, "group": "g"}, now_ms=T0)


def test_version_moves_only_when_the_record_changes() -> None:
    state = _state()
    a = _join(state)
    version = state.version
    a.heartbeat(state, T0 + 1)  # only the session renews
    assert state.version == version
    _join(state)
    assert state.version > version


def test_offsets_reset_needs_an_empty_group() -> None:
    state = _state()
    state.ensure_empty()
    _join(state)
    with pytest.raises(GroupNotEmptyError):
        state.ensure_empty()


def test_limits_are_configurable() -> None:
    state = GroupState("g", limits=GroupLimits(heartbeat_interval_ms=2_000))
    assert state.join("x", None, ["s"], 30_000, T0).heartbeat_interval_ms == 2_000


def test_a_request_renews_a_live_session_on_arrival_but_never_revives_an_expired_one() -> None:
    state = _state()
    waiting, quiet = _join(state), _join(state)
    state.touch(waiting.member_id, T0 + SESSION - 1)  # arrived in time, waits for the lock
    state.touch(quiet.member_id, T0 + SESSION)  # arrived when its session had ended
    state.touch("nobody", T0)
    assert state.expire(T0 + SESSION) == [quiet.member_id]
    assert state.expire(T0 + 2 * SESSION - 2) == []
    assert state.expire(T0 + 2 * SESSION - 1) == [waiting.member_id]
