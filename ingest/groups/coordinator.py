"""The consumer groups of one ``__cursors`` partition this node leads, at one leader epoch.

A thin shell around ``GroupState`` (ingest/groups/state.py): it loads every group's metadata
record when the partition's ``CursorStore`` is opened for a new leadership (every member then
gets a fresh session, as Kafka's new coordinator gives them), feeds requests and the time to
the state machine, and writes the metadata record (acks=all) *before* answering whenever the
state moved. A heartbeat that changed nothing is not written. Commits are ordinary cursors
``__group:<group>``, written together with ``put_many`` (one ``__cursors`` partition holds a
group and all its offsets by construction).

One lock per group serializes its requests, so a commit validated against an assignment
lands before the assignment can change.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping

from ingest.groups.cursor_store import CursorStore
from ingest.groups.state import NO_CLIENT, GroupLimits, GroupState, MemberClient, MemberView
from ingest.groups.streams import GroupStreams, earliest_offset
from spark_log.api_models import (
    GroupCommitted,
    GroupDescription,
    GroupMember,
    GroupOffset,
    GroupOffsets,
    GroupPartition,
    GroupSummary,
    MemberAssignment,
    OffsetResetEntry,
    PartitionState,
)
from spark_log.cursor_record import (
    MAX_CURSOR_ID_LENGTH,
    CursorValue,
    cursor_key,
    validate_cursor_id,
)
from spark_log.errors import (
    CorruptRecordError,
    FencedMemberError,
    GroupNotFoundError,
    InvalidRequestError,
    LiftlogError,
    PartitionNotFoundError,
    StreamNotFoundError,
    UnavailableError,
)
from spark_log.json_types import JsonObject

log = logging.getLogger("liftlog.groups")

GROUP_KEY_PREFIX = b"\0group\0"
GROUP_CURSOR_PREFIX = "__group:"
StreamFilter = Callable[[str], bool]
PartitionStates = Callable[[str], Awaitable[list[PartitionState]]]
"""Each partition of a stream with the offsets its leader reports."""
MembershipEvents = Callable[[str, JsonObject], Awaitable[None]]
"""Told ``("group_join" | "group_leave", fields)`` once a membership change is written (the
node records it in the activity stream)."""

LEFT = "left"
REMOVED = "removed"
"""Why a member is gone: it left, or the coordinator removed it (its session expired, or a
member with its instance id replaced it)."""


def group_key(group: str) -> bytes:
    """The metadata record's key: a leading NUL cannot collide with a cursor key."""
    return GROUP_KEY_PREFIX + group.encode()


def group_cursor_id(group: str) -> str:
    return GROUP_CURSOR_PREFIX + group


def validate_group_id(group: str) -> None:
    """A group id follows the cursor id rules, and ``__group:<group>`` must be one too."""
    validate_cursor_id(group)
    if len(group_cursor_id(group)) > MAX_CURSOR_ID_LENGTH:
        raise InvalidRequestError(
            f"group id too long: '{GROUP_CURSOR_PREFIX}<group>' must fit "
            f"{MAX_CURSOR_ID_LENGTH} characters"
        )


def now_ms() -> int:
    return int(time.time() * 1000)


def state_name(state: GroupState) -> str:
    """``empty``; ``stable`` when every member holds exactly its target at the target epoch
    with nothing revoking; ``reconciling`` otherwise."""
    if not state.members:
        return "empty"
    for member in state.members.values():
        target = state.target.get(member.member_id, set())
        if (
            member.member_epoch != state.assignment_epoch
            or member.revoking
            or set(member.assigned) != target
        ):
            return "reconciling"
    return "stable"


class GroupCoordinator:
    """Every group whose ``__cursors`` partition is ``store``'s, for this leadership."""

    def __init__(
        self,
        store: CursorStore,
        limits: GroupLimits,
        streams: GroupStreams,
        events: MembershipEvents | None = None,
    ) -> None:
        self.store = store
        self._limits = limits
        self._streams = streams
        self._events = events
        self._groups: dict[str, GroupState] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        # when each group's current rebalance began (monotonic s): logged once it is stable
        self._rebalancing_since: dict[str, tuple[int, float]] = {}
        for key, _value in store.items_with_prefix(GROUP_KEY_PREFIX):
            group = key[len(GROUP_KEY_PREFIX) :].decode()
            loaded = self._load(group)
            if loaded is not None:
                self._groups[group] = loaded
        # the members each group's last written record holds: what a change is told against
        # (a new leadership announces nobody again: its members were announced before)
        self._written_members = {g: frozenset(s.members) for g, s in self._groups.items()}

    @property
    def current(self) -> bool:
        return self.store.current

    def _load(self, group: str) -> GroupState | None:
        """The group as its last committed metadata record says (None: none or a tombstone)."""
        raw = self.store.get_raw(group_key(group))
        if raw is None:
            return None
        try:
            return GroupState.from_json(json.loads(raw), now_ms=now_ms(), limits=self._limits)
        except (CorruptRecordError, ValueError) as exc:
            log.warning("group %s: unreadable metadata record (ignored): %s", group, exc)
            return None

    def _lock(self, group: str) -> asyncio.Lock:
        return self._locks.setdefault(group, asyncio.Lock())

    def _existing(self, group: str) -> GroupState:
        state = self._groups.get(group)
        if state is None:
            raise FencedMemberError(f"group {group} has no members: join it")
        return state

    async def _persist(self, state: GroupState, before: int, gone: str = REMOVED) -> None:
        """Write the metadata record when the state moved; on failure the group goes back to
        its last committed record, so memory never runs ahead of the log. Members that
        joined or went (``gone`` says why) are told to ``events`` once the record is written."""
        if state.version == before:
            return
        value = json.dumps(state.to_json(), separators=(",", ":")).encode()
        try:
            await self.store.put_raw(group_key(state.group), value)
        except LiftlogError:
            restored = self._load(state.group)
            if restored is None:
                self._groups.pop(state.group, None)
            else:
                self._groups[state.group] = restored
            raise
        self._groups[state.group] = state
        self._log_rebalance(state)
        await self._announce(state, gone)

    async def _announce(self, state: GroupState, gone: str) -> None:
        members = frozenset(state.members)
        written = self._written_members.get(state.group, frozenset())
        self._written_members[state.group] = members
        if self._events is None:
            return
        for member_id in sorted(members - written):
            await self._events("group_join", {"group": state.group, "member_id": member_id})
        for member_id in sorted(written - members):
            fields = {"group": state.group, "member_id": member_id, "reason": gone}
            await self._events("group_leave", fields)

    def _log_rebalance(self, state: GroupState) -> None:
        """Log how long a rebalance took, from the epoch bump to every member holding its
        target (the figure to watch when tuning heartbeat intervals)."""
        name = state_name(state)
        began = self._rebalancing_since.get(state.group)
        if name == "reconciling" and (began is None or began[0] != state.group_epoch):
            self._rebalancing_since[state.group] = (state.group_epoch, time.monotonic())
        elif name != "reconciling" and began is not None:
            del self._rebalancing_since[state.group]
            log.info(
                "group %s %s at epoch %d, %.0f ms after the rebalance began",
                state.group,
                name,
                state.group_epoch,
                (time.monotonic() - began[1]) * 1000,
            )

    async def _refresh_counts(self, state: GroupState, extra: Iterable[str] = ()) -> None:
        """Adopt the current partition counts of every subscribed stream (bumps the group
        epoch when a stream grew, appeared or was deleted)."""
        streams = {s for m in state.members.values() for s in m.streams} | set(extra)
        state.set_partition_counts(await self._streams.counts(streams))

    def _assignment(self, state: GroupState, view: MemberView) -> MemberAssignment:
        return MemberAssignment(
            group=state.group,
            member_id=view.member_id,
            member_epoch=view.member_epoch,
            group_epoch=view.group_epoch,
            assigned=view.assigned,
            revoking=view.revoking,
            heartbeat_interval_ms=view.heartbeat_interval_ms,
            session_timeout_ms=state.members[view.member_id].session_timeout_ms,
        )

    # ------------------------------------------------------------------ membership

    async def join(
        self,
        group: str,
        member_id: str | None,
        instance_id: str | None,
        streams: list[str],
        session_timeout_ms: int | None,
        client: MemberClient = NO_CLIENT,
    ) -> MemberAssignment:
        for stream in streams:
            await self._streams.require(stream)
        async with self._lock(group):
            state = self._groups.get(group)
            if state is None:  # a new group is written only once its first join succeeded
                state = GroupState(group, limits=self._limits)
                await self._refresh_counts(state, streams)
                view = state.join(
                    member_id, instance_id, streams, session_timeout_ms, now_ms(), client
                )
                await self._persist(state, -1)
                return self._assignment(state, view)
            before = state.version
            try:
                state.expire(now_ms())
                await self._refresh_counts(state, streams)
                view = state.join(
                    member_id, instance_id, streams, session_timeout_ms, now_ms(), client
                )
            finally:  # expiries and count changes are written even when the join is refused
                await self._persist(state, before)
            return self._assignment(state, view)

    async def heartbeat(
        self, group: str, member_id: str, member_epoch: int, owned: Mapping[str, list[int]]
    ) -> MemberAssignment:
        self._touch(group, member_id)
        async with self._lock(group):
            state = self._existing(group)
            before = state.version
            try:
                state.expire(now_ms())
                await self._refresh_counts(state)
                view = state.heartbeat(member_id, member_epoch, owned, now_ms())
            finally:  # an expiry found here is written before the member is told it is fenced
                await self._persist(state, before)
            return self._assignment(state, view)

    def _touch(self, group: str, member_id: str) -> None:
        """The member is alive now, whatever the lock makes its request wait for."""
        state = self._groups.get(group)
        if state is not None:
            state.touch(member_id, now_ms())

    async def leave(self, group: str, member_id: str) -> None:
        async with self._lock(group):
            state = self._existing(group)
            before = state.version
            state.leave(member_id)
            await self._persist(state, before, gone=LEFT)

    def member_streams(self, group: str, member_id: str) -> tuple[str, ...]:
        """The member's subscription (what its heartbeat and leave are authorized on)."""
        member = self._existing(group).members.get(member_id)
        if member is None:
            raise FencedMemberError(f"group {group} has no member {member_id}: rejoin")
        return member.streams

    def has_members(self, group: str) -> bool:
        state = self._groups.get(group)
        return state is not None and bool(state.members)

    async def expire_due(self) -> int | None:
        """Expire every member whose session ended, write what changed; the next deadline."""
        deadlines: list[int] = []
        for group in list(self._groups):
            due = self._next_deadline(group)
            if due is not None and due <= now_ms():
                async with self._lock(group):
                    state = self._groups.get(group)  # deleted or reloaded meanwhile?
                    if state is None:
                        continue
                    before = state.version
                    expired = state.expire(now_ms())
                    if expired:
                        log.info("group %s: sessions of %s expired", group, ", ".join(expired))
                    await self._persist(state, before)
                due = self._next_deadline(group)
            if due is not None:
                deadlines.append(due)
        return min(deadlines, default=None)

    def _next_deadline(self, group: str) -> int | None:
        state = self._groups.get(group)
        return None if state is None else state.next_deadline_ms()

    # ------------------------------------------------------------------ offsets

    async def commit(
        self, group: str, member_id: str, member_epoch: int, offsets: list[GroupOffset]
    ) -> GroupCommitted:
        self._touch(group, member_id)
        async with self._lock(group):
            state = self._existing(group)
            state.validate_commit(
                member_id, member_epoch, [(o.stream, o.partition) for o in offsets]
            )
            await self._write_offsets(group, [(o.stream, o.partition, o.offset) for o in offsets])
        return GroupCommitted(group, tuple(offsets))

    async def _write_offsets(self, group: str, offsets: list[tuple[str, int, int | None]]) -> None:
        cursor_id = group_cursor_id(group)
        at = now_ms()
        items: list[tuple[bytes, bytes | None]] = []
        for stream, partition, offset in offsets:
            if offset is None:
                raise InvalidRequestError(f"no offset for {stream}/{partition}")
            facts = await self._streams.facts(stream)  # cached: commits are frequent
            if facts is None:
                raise StreamNotFoundError(f"stream {stream!r} does not exist")
            if not 0 <= partition < facts.partitions:
                raise PartitionNotFoundError(f"stream {stream!r} has no partition {partition}")
            value = CursorValue(offset, facts.created_at_ms, at)
            items.append((cursor_key(cursor_id, stream, partition), value.to_bytes()))
        await self.store.put_many(items)

    def _committed(self, group: str, stream: str, partition: int, created_at_ms: int) -> int | None:
        value = self.store.get(cursor_key(group_cursor_id(group), stream, partition))
        if value is None or value.stream_created_at_ms != created_at_ms:
            return None
        return value.offset

    def _committed_streams(self, group: str) -> set[str]:
        prefix = (group_cursor_id(group) + "\0").encode()
        return {
            key[len(prefix) :].split(b"\0")[0].decode()
            for key, _ in self.store.items_with_prefix(prefix)
        }

    def _streams_of(self, group: str) -> set[str]:
        """The subscribed streams and those with committed offsets; GroupNotFoundError when
        the group has neither metadata nor offsets."""
        state = self._groups.get(group)
        streams = self._committed_streams(group)
        if state is not None:
            streams |= set(state.partition_counts)
            streams |= {s for m in state.members.values() for s in m.streams}
        elif not streams:
            raise GroupNotFoundError(f"consumer group {group!r} does not exist")
        return streams

    async def fetch_offsets(
        self, group: str, stream: str | None, visible: StreamFilter
    ) -> GroupOffsets:
        streams = {stream} if stream is not None else self._streams_of(group)
        out: list[GroupOffset] = []
        for name in sorted(s for s in streams if visible(s)):
            facts = await self._streams.facts(name)
            if facts is None:
                continue
            for p in range(facts.partitions):
                out.append(
                    GroupOffset(name, p, self._committed(group, name, p, facts.created_at_ms))
                )
        return GroupOffsets(group, tuple(out))

    # ------------------------------------------------------------------ admin

    def known_groups(self) -> set[str]:
        """Groups with members or metadata, and groups with committed offsets alone (whose
        consumers are gone: their lag is what an operator watches)."""
        prefix = GROUP_CURSOR_PREFIX.encode()
        committed = {
            key[len(prefix) :].split(b"\0")[0].decode()
            for key, _ in self.store.items_with_prefix(prefix)
        }
        return set(self._groups) | committed

    def summaries(self) -> list[GroupSummary]:
        return [
            GroupSummary(name, len(s.members), s.group_epoch, state_name(s))
            for name, s in sorted(self._groups.items())
        ]

    async def describe(
        self,
        group: str,
        broker_id: int,
        visible: StreamFilter,
        partition_states: PartitionStates | None = None,
    ) -> GroupDescription:
        """``partition_states`` replaces the leaders' offsets read for this call alone (one
        read per stream shared by many groups, as the lag metric does)."""
        read_states = partition_states or self._streams.partition_states
        streams = self._streams_of(group)
        state = self._groups.get(group) or GroupState(group, limits=self._limits)
        owners = {
            tp: m.member_id for m in state.members.values() for tp in (*m.revoking, *m.assigned)
        }
        partitions: list[GroupPartition] = []
        for name in sorted(s for s in streams if visible(s)):
            facts = await self._streams.facts(name)
            if facts is None:
                continue
            try:
                states = await read_states(name)
            except StreamNotFoundError:  # deleted since its facts were cached
                continue
            for ps in states:
                committed = self._committed(group, name, ps.partition, facts.created_at_ms)
                lag = _lag(committed, ps)
                hw = ps.high_watermark
                owner = owners.get((name, ps.partition))
                partitions.append(GroupPartition(name, ps.partition, owner, committed, hw, lag))
        members = tuple(
            GroupMember(
                m.member_id,
                m.instance_id,
                m.member_epoch,
                m.streams,
                _by_stream(m.assigned),
                _by_stream(m.revoking),
                m.client.client_id,
                m.client.client_host,
            )
            for _, m in sorted(state.members.items())
        )
        return GroupDescription(
            group, state.group_epoch, state_name(state), broker_id, members, tuple(partitions)
        )

    async def reset_offsets(
        self,
        group: str,
        stream: str,
        to: str,
        value: int | None,
        partitions: list[int] | None,
        execute: bool,
    ) -> list[OffsetResetEntry]:
        """Kafka's ``--reset-offsets``: only while the group has no member (its commits
        would overwrite the reset). ``new`` is the committed offset written, one below the
        next offset to read."""
        async with self._lock(group):
            state = self._groups.get(group)
            if state is not None:
                state.ensure_empty()
            facts = await self._streams.require(stream)
            chosen = sorted(set(range(facts.partitions) if partitions is None else partitions))
            for p in chosen:
                if not 0 <= p < facts.partitions:
                    raise PartitionNotFoundError(f"stream {stream!r} has no partition {p}")
            states = {ps.partition: ps for ps in await self._streams.partition_states(stream)}
            plan: list[OffsetResetEntry] = []
            for p in chosen:
                current = self._committed(group, stream, p, facts.created_at_ms)
                target = await self._target(stream, states[p], to, value, current)
                plan.append(OffsetResetEntry(stream, p, current, target - 1))
            if execute:
                await self._write_offsets(group, [(stream, e.partition, e.new) for e in plan])
                if state is None:
                    created = GroupState(group, limits=self._limits)
                    created.set_partition_counts({stream: facts.partitions})
                    await self._persist(created, -1)
            return plan

    async def _target(
        self, stream: str, ps: PartitionState, to: str, value: int | None, current: int | None
    ) -> int:
        """The next offset to read after the reset, clamped to ``[earliest, HW]``."""
        earliest, hw = earliest_offset(ps), ps.high_watermark
        if earliest is None or hw is None:
            raise UnavailableError(f"{stream}/{ps.partition} has no leader to report its offsets")
        if to == "earliest":
            return earliest
        if to == "latest":
            return hw
        if value is None:
            raise InvalidRequestError(f"a reset to {to!r} needs a value")
        if to == "offset":
            target = value
        elif to == "timestamp":
            target = await self._streams.offset_for_timestamp(stream, ps, value)
        else:  # shift: from the committed position, or from the HW when nothing is committed
            target = (hw if current is None else current + 1) + value
        return min(max(target, earliest), hw)

    async def delete(self, group: str) -> None:
        """Delete an empty group: its offsets and its metadata record (tombstones)."""
        async with self._lock(group):
            state = self._groups.get(group)
            if state is not None:
                state.ensure_empty()
            prefix = (group_cursor_id(group) + "\0").encode()
            keys = [key for key, _ in self.store.items_with_prefix(prefix)]
            if state is None and not keys:
                raise GroupNotFoundError(f"consumer group {group!r} does not exist")
            items: list[tuple[bytes, bytes | None]] = [(k, None) for k in keys]
            items.append((group_key(group), None))
            await self.store.put_many(items)
            self._groups.pop(group, None)
            self._rebalancing_since.pop(group, None)
            self._written_members.pop(group, None)


def _lag(committed: int | None, state: PartitionState) -> int | None:
    """Records the group has not processed: after its committed offset, or from the first
    readable offset when it committed nothing (records wait all the same). None while the
    partition's leader does not report its offsets."""
    hw = state.high_watermark
    start = committed + 1 if committed is not None else earliest_offset(state)
    return None if hw is None or start is None else max(0, hw - start)


def _by_stream(held: Iterable[tuple[str, int]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for stream, partition in sorted(held):
        out.setdefault(stream, []).append(partition)
    return out
