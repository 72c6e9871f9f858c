"""The group coordinator shell: what it writes, when, and what a new leadership reads back."""

from __future__ import annotations

import json

import pytest

from ingest.groups.coordinator import GroupCoordinator, group_key
from ingest.groups.state import GroupLimits
from ingest.groups.streams import StreamFacts
from spark_log.api_models import GroupOffset
from spark_log.cursor_record import CursorValue, cursor_key
from spark_log.errors import FencedMemberError, NotEnoughReplicasError, StreamNotFoundError

LIMITS = GroupLimits(min_session_timeout_ms=1, default_session_timeout_ms=60_000)


class FakeStore:
    """A ``CursorStore`` in memory that counts writes and can refuse them."""

    def __init__(self) -> None:
        self.entries: dict[bytes, bytes] = {}
        self.writes = 0
        self.refuse = False
        self.current = True

    def get_raw(self, key: bytes) -> bytes | None:
        return self.entries.get(key)

    def get(self, key: bytes) -> CursorValue | None:
        raw = self.entries.get(key)
        return None if raw is None else CursorValue.from_bytes(raw)

    def items_with_prefix(self, prefix: bytes) -> list[tuple[bytes, bytes]]:
        return [(k, v) for k, v in self.entries.items() if k.startswith(prefix)]

    async def put_raw(self, key: bytes, value: bytes | None) -> None:
        await self.put_many([(key, value)])

    async def put_many(self, items: list[tuple[bytes, bytes | None]]) -> None:
        if self.refuse:
            raise NotEnoughReplicasError("refused")
        self.writes += 1
        for key, value in items:
            if value is None:
                self.entries.pop(key, None)
            else:
                self.entries[key] = value


class FakeStreams:
    async def counts(self, streams: set[str]) -> dict[str, int]:
        return {s: 4 for s in streams if s == "orders"}

    async def require(self, stream: str) -> StreamFacts:
        if stream != "orders":
            raise StreamNotFoundError(stream)
        return StreamFacts(4, 1)

    async def facts(self, stream: str) -> StreamFacts | None:
        return StreamFacts(4, 1) if stream == "orders" else None


def _coordinator(store: FakeStore) -> GroupCoordinator:
    return GroupCoordinator(store, LIMITS, FakeStreams())  # type: ignore[arg-type]


async def test_a_join_is_written_before_it_is_answered_and_read_back_by_a_new_leader() -> None:
    store = FakeStore()
    first = await _coordinator(store).join("g", None, None, ["orders"], None)
    assert store.writes == 1
    record = json.loads(store.entries[group_key("g")])
    assert [m["member_id"] for m in record["members"]] == [first.member_id]
    assert first.assigned == {"orders": [0, 1, 2, 3]}

    reloaded = _coordinator(store)  # the next leadership: same member, same epoch
    again = await reloaded.heartbeat("g", first.member_id, first.member_epoch, first.assigned)
    assert (again.member_epoch, again.assigned) == (first.member_epoch, first.assigned)
    assert store.writes == 1  # a heartbeat that changed nothing is not written


async def test_a_refused_write_leaves_the_group_as_the_log_has_it() -> None:
    store = FakeStore()
    coordinator = _coordinator(store)
    first = await coordinator.join("g", None, None, ["orders"], None)
    store.refuse = True
    with pytest.raises(NotEnoughReplicasError):
        await coordinator.join("g", None, None, ["orders"], None)
    with pytest.raises(NotEnoughReplicasError):
        await coordinator.join("other", None, None, ["orders"], None)
    store.refuse = False
    assert [s.group for s in coordinator.summaries()] == ["g"]
    assert [s.members for s in coordinator.summaries()] == [1]
    view = await coordinator.heartbeat("g", first.member_id, first.member_epoch, first.assigned)
    assert view.assigned == first.assigned


async def test_expiry_is_written_and_the_expired_member_is_fenced() -> None:
    store = FakeStore()
    coordinator = _coordinator(store)
    quiet = await coordinator.join("g", None, None, ["orders"], 1)
    while await coordinator.expire_due() is not None:
        pass
    record = json.loads(store.entries[group_key("g")])
    assert record["members"] == []
    with pytest.raises(FencedMemberError):
        await coordinator.heartbeat("g", quiet.member_id, quiet.member_epoch, {})


async def test_a_commit_writes_group_cursors_in_one_append() -> None:
    store = FakeStore()
    coordinator = _coordinator(store)
    member = await coordinator.join("g", None, None, ["orders"], None)
    offsets = [GroupOffset("orders", 0, 5), GroupOffset("orders", 3, 9)]
    writes = store.writes
    await coordinator.commit("g", member.member_id, member.member_epoch, offsets)
    assert store.writes == writes + 1
    value = store.get(cursor_key("__group:g", "orders", 3))
    assert value is not None and value.offset == 9
    fetched = await coordinator.fetch_offsets("g", None, lambda _s: True)
    assert [o.offset for o in fetched.offsets] == [5, None, None, 9]
    with pytest.raises(FencedMemberError):
        await coordinator.commit("g", "nobody", member.member_epoch, offsets)


async def test_membership_changes_are_told_once_written_and_never_again_by_a_new_leader() -> None:
    store = FakeStore()
    told: list[tuple[str, dict[str, object]]] = []

    async def events(op: str, fields: dict[str, object]) -> None:
        told.append((op, fields))

    coordinator = GroupCoordinator(store, LIMITS, FakeStreams(), events)  # type: ignore[arg-type]
    first = await coordinator.join("g", None, None, ["orders"], None)
    store.refuse = True  # a join that is not written is not told
    with pytest.raises(NotEnoughReplicasError):
        await coordinator.join("g", None, None, ["orders"], None)
    store.refuse = False
    quiet = await coordinator.join("g", None, None, ["orders"], 1)  # (leave never expires)
    reloaded = GroupCoordinator(store, LIMITS, FakeStreams(), events)  # type: ignore[arg-type]
    await reloaded.leave("g", first.member_id)
    while await reloaded.expire_due() is not None:
        pass
    assert told == [
        ("group_join", {"group": "g", "member_id": first.member_id}),
        ("group_join", {"group": "g", "member_id": quiet.member_id}),
        ("group_leave", {"group": "g", "member_id": first.member_id, "reason": "left"}),
        ("group_leave", {"group": "g", "member_id": quiet.member_id, "reason": "removed"}),
    ]
