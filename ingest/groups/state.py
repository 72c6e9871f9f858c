"""One consumer group's membership, epochs and assignment, as a pure state machine (KIP-848).

The coordinator (the leader of the group's ``__cursors`` partition) is a thin shell around this
class: it feeds it requests and the time, persists ``to_json()`` whenever ``version`` moved, and
rebuilds it with ``from_json()`` after a failover. Nothing here does I/O, reads a clock or
awaits, so every rule below is unit-tested with plain integers for time.

The rules, with their Kafka origins:

- ``group_epoch`` bumps on every membership, subscription or partition-count change, and the
  target assignment (``sticky_assign``) is recomputed at once, so ``assignment_epoch`` always
  equals ``group_epoch`` here (KIP-848 allows an asynchronous assignor; ours is cheap).
- A member converges to its target one heartbeat at a time (KIP-429/848 cooperative
  rebalancing): partitions it must give up go to its ``revoking`` set first and stay its own
  until a heartbeat no longer lists them as owned (or it leaves or expires). Only then may
  another member get them, so no partition is ever owned by two members at once.
- ``member_epoch`` is the group epoch at which the member's current assignment was handed out.
  A member with revocations outstanding keeps its old epoch until it has acked them, as in
  KIP-848, so a client never holds a new epoch together with partitions it should have dropped.
- Each held partition remembers the epoch at which it was given to the member: a commit is
  valid iff ``assignment_epoch(p) <= epoch <= member_epoch`` (KIP-1251), so a commit in flight
  across an epoch bump that did not touch ``p`` is not refused for nothing.
- Static membership (KIP-345): a join with the ``instance_id`` of a live member takes over its
  slot, partitions and epoch under a new member id, with no rebalance; the old id is fenced.
- Session timeouts are tracked here but not persisted: after ``from_json`` every member gets
  a fresh session from the load time, as Kafka's new coordinator does.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypedDict

from ingest.groups.assignor import TopicPartition, sticky_assign
from spark_log.errors import (
    CorruptRecordError,
    FencedMemberError,
    GroupNotEmptyError,
    InvalidRequestError,
    LiftlogError,
    StaleMemberEpochError,
)
from spark_log.json_types import JsonMapping

METADATA_VERSION = 1
ByStream = dict[str, list[int]]


class MemberRecord(TypedDict):
    """One member in a group metadata record (``GroupRecord.members``)."""

    member_id: str
    instance_id: str | None
    streams: list[str]
    session_timeout_ms: int
    member_epoch: int
    assigned: ByStream
    revoking: ByStream
    assignment_epochs: dict[str, dict[str, int]]
    """The member epoch each held partition was assigned at: stream, then partition."""
    target: ByStream
    client_id: str | None
    client_host: str | None


class GroupRecord(TypedDict):
    """A group metadata record's value, as ``GroupState.to_json`` writes it."""

    v: int
    group: str
    group_epoch: int
    assignment_epoch: int
    partition_counts: dict[str, int]
    members: list[MemberRecord]


def random_member_id() -> str:
    """The production member id factory: unique across coordinators without coordination."""
    return uuid.uuid4().hex


@dataclass(frozen=True)
class GroupLimits:
    """Session bounds and the heartbeat interval (KIP-848 defaults: 45 s and 5 s)."""

    min_session_timeout_ms: int = 3_000
    max_session_timeout_ms: int = 300_000
    default_session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000


@dataclass(frozen=True)
class MemberClient:
    """Who a member is, for the people who watch the group: the name its client gave itself
    (Kafka's ``client.id``) and the address it joined from (``client.host``)."""

    client_id: str | None = None
    client_host: str | None = None


NO_CLIENT = MemberClient()


@dataclass(frozen=True)
class MemberView:
    """What a join or heartbeat answers: the member's assignment and what to give up now.

    ``pending`` lists target partitions not handed out yet because another member (or this
    one, through its own ``revoking``) still holds them; they arrive in a later heartbeat.
    """

    member_id: str
    member_epoch: int
    group_epoch: int
    assigned: ByStream
    revoking: ByStream
    pending: ByStream
    heartbeat_interval_ms: int


@dataclass
class Member:
    """One member. ``assigned``/``revoking`` map each held partition to its assignment epoch."""

    member_id: str
    instance_id: str | None
    streams: tuple[str, ...]
    session_timeout_ms: int
    member_epoch: int = 0
    assigned: dict[TopicPartition, int] = field(default_factory=dict)
    revoking: dict[TopicPartition, int] = field(default_factory=dict)
    client: MemberClient = NO_CLIENT
    deadline_ms: int = 0  # session end; never persisted

    def held(self) -> set[TopicPartition]:
        return set(self.assigned) | set(self.revoking)


class GroupState:
    """Membership, epochs, target assignment and reconciliation of one consumer group."""

    def __init__(
        self,
        group: str,
        *,
        limits: GroupLimits = GroupLimits(),
        id_factory: Callable[[], str] = random_member_id,
    ) -> None:
        self.group = group
        self.limits = limits
        self._new_id = id_factory
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.partition_counts: dict[str, int] = {}
        self.members: dict[str, Member] = {}
        self.target: dict[str, set[TopicPartition]] = {}
        # bumps on every change ``to_json`` would show: the shell persists when it moved
        self.version = 0

    # ------------------------------------------------------------------ requests

    def join(
        self,
        member_id: str | None,
        instance_id: str | None,
        streams: Iterable[str],
        session_timeout_ms: int | None,
        now_ms: int,
        client: MemberClient = NO_CLIENT,
    ) -> MemberView:
        """Add a member, rejoin a known one (it dropped everything), or take a static slot.

        A known ``member_id`` means the client lost its partitions (it was fenced or restarted
        with a saved id): its held partitions are released and it starts again at epoch 0,
        getting its sticky target back. An unknown non-None id is accepted as a new member.
        """
        subscription = _subscription(streams)
        timeout = self._session_timeout(session_timeout_ms)
        static = self._by_instance(instance_id)
        if static is not None and static.deadline_ms <= now_ms:
            self._remove([static.member_id])
            static = None
        if static is not None and static.member_id != member_id:
            member = self._take_over(static, member_id, subscription, timeout)
        elif member_id is not None and member_id in self.members:
            member = self.members[member_id]
            member.assigned.clear()
            member.revoking.clear()
            member.member_epoch = 0
            member.instance_id = instance_id
            member.session_timeout_ms = timeout
            if member.streams != subscription:
                member.streams = subscription
                self._rebalance()
        else:
            member = Member(member_id or self._fresh_id(), instance_id, subscription, timeout)
            self.members[member.member_id] = member
            self._rebalance()
        member.client = client
        member.deadline_ms = now_ms + timeout
        self._reconcile(member)
        self.version += 1
        return self._view(member)

    def heartbeat(
        self, member_id: str, member_epoch: int, owned: Mapping[str, Iterable[int]], now_ms: int
    ) -> MemberView:
        """Renew the session, take revocation acks from ``owned``, hand out what is free.

        An older ``member_epoch`` is a lost response and is answered again; a newer one, or
        an ``owned`` list claiming a partition the member does not hold (partitions of deleted
        streams aside), is a client that lost track: ``FencedMemberError``, it must rejoin.
        """
        member = self._member(member_id)
        claimed = {tp for tp in _pairs(owned) if self._exists(tp)}
        if member_epoch > member.member_epoch:
            raise FencedMemberError(
                f"member {member_id} of group {self.group} sent epoch {member_epoch}, "
                f"newer than its epoch {member.member_epoch}: rejoin"
            )
        if not claimed <= member.held():
            unheld = sorted(claimed - member.held())
            raise FencedMemberError(
                f"member {member_id} of group {self.group} claims {unheld} it does not hold: "
                "drop every partition and rejoin"
            )
        member.deadline_ms = now_ms + member.session_timeout_ms
        released = [tp for tp in member.revoking if tp not in claimed]
        for tp in released:
            del member.revoking[tp]
        if self._reconcile(member) or released:
            self.version += 1
        return self._view(member)

    def touch(self, member_id: str, now_ms: int) -> None:
        """Renew a live member's session when its request arrives, before the request waits
        for the group's lock: a heartbeat or commit queued behind others must not lose the
        session while it waits (Kafka's coordinator counts commits as liveness too). An
        unknown or already expired member is left to the request itself to refuse."""
        member = self.members.get(member_id)
        if member is not None and member.deadline_ms > now_ms:
            member.deadline_ms = max(member.deadline_ms, now_ms + member.session_timeout_ms)

    def leave(self, member_id: str) -> None:
        """Remove a member at once (it committed and stopped): its partitions are free now."""
        self._member(member_id)
        self._remove([member_id])
        self.version += 1

    def expire(self, now_ms: int) -> list[str]:
        """Remove every member whose session ended at or before ``now_ms``; their ids, sorted."""
        expired = sorted(m.member_id for m in self.members.values() if m.deadline_ms <= now_ms)
        if expired:
            self._remove(expired)
            self.version += 1
        return expired

    def set_partition_counts(self, counts: Mapping[str, int]) -> bool:
        """Adopt the streams' current partition counts (a stream grew, was created or deleted).

        Partitions that no longer exist are dropped from every member at once: there is
        nothing left to revoke. True when anything changed (the group epoch then bumped).
        """
        fresh = {stream: n for stream, n in counts.items() if n > 0}
        if fresh == self.partition_counts:
            return False
        self.partition_counts = fresh
        for member in self.members.values():
            for held in (member.assigned, member.revoking):
                for tp in [tp for tp in held if not self._exists(tp)]:
                    del held[tp]
        self._rebalance()
        self.version += 1
        return True

    def validate_commit(
        self, member_id: str, member_epoch: int, partitions: Iterable[TopicPartition]
    ) -> None:
        """Refuse a commit unless every partition is held and the epoch fits (KIP-1251).

        Unknown member: ``FencedMemberError``. A partition the member does not hold (in
        ``assigned`` or ``revoking``), or an epoch outside ``[assignment_epoch(p),
        member_epoch]``: ``StaleMemberEpochError`` (heartbeat, then retry or drop).
        """
        member = self._member(member_id)
        for tp in partitions:
            since = member.assigned.get(tp, member.revoking.get(tp))
            if since is None:
                raise StaleMemberEpochError(
                    f"{tp[0]}/{tp[1]} is not assigned to member {member_id} of group {self.group}"
                )
            if not since <= member_epoch <= member.member_epoch:
                raise StaleMemberEpochError(
                    f"commit epoch {member_epoch} for {tp[0]}/{tp[1]} is outside "
                    f"[{since}, {member.member_epoch}] for member {member_id}: heartbeat first"
                )

    def ensure_empty(self) -> None:
        """Offsets may only be reset (or the group deleted) with no member (Kafka's rule)."""
        if self.members:
            raise GroupNotEmptyError(
                f"group {self.group} has {len(self.members)} member(s): stop them first"
            )

    def next_deadline_ms(self) -> int | None:
        """When ``expire`` can next remove someone: the shell's timer."""
        return min((m.deadline_ms for m in self.members.values()), default=None)

    # ------------------------------------------------------------------ rules

    def _rebalance(self) -> None:
        """Bump the group epoch and recompute the sticky target from the previous target."""
        self.group_epoch += 1
        current = {tp: owner for owner, tps in self.target.items() for tp in tps}
        result = sticky_assign(
            {m.member_id: m.streams for m in self.members.values()},
            self.partition_counts,
            current,
        )
        self.target = {owner: set(_pairs(by_stream)) for owner, by_stream in result.items()}
        self.assignment_epoch = self.group_epoch

    def _reconcile(self, member: Member) -> bool:
        """Move ``member`` one step towards its target; True when it changed.

        Behind the target epoch: what left its target goes to ``revoking``; once nothing is
        revoking it takes the target epoch. At the target epoch: every target partition no
        other member holds is handed out, stamped with the member epoch.
        """
        target = self.target.get(member.member_id, set())
        changed = False
        if member.member_epoch < self.assignment_epoch:
            for tp in [tp for tp in member.assigned if tp not in target]:
                member.revoking[tp] = member.assigned.pop(tp)
                changed = True
            if not member.revoking:
                member.member_epoch = self.assignment_epoch
                changed = True
        if member.member_epoch == self.assignment_epoch:
            taken = {tp for m in self.members.values() if m is not member for tp in m.held()}
            for tp in sorted(target - member.held() - taken):
                member.assigned[tp] = member.member_epoch
                changed = True
        return changed

    def _take_over(
        self, old: Member, member_id: str | None, streams: tuple[str, ...], timeout: int
    ) -> Member:
        """KIP-345: a new incarnation of a static member keeps the slot under a new id.

        It keeps the assignment and epoch; partitions the old incarnation was revoking are
        released (the new process never had them). No rebalance unless the subscription
        changed.
        """
        if member_id is not None and member_id in self.members:
            raise InvalidRequestError(
                f"instance id {old.instance_id} belongs to member {old.member_id}, "
                f"not to {member_id}"
            )
        new = Member(
            member_id or self._fresh_id(),
            old.instance_id,
            streams,
            timeout,
            member_epoch=old.member_epoch,
            assigned=dict(old.assigned),
        )
        del self.members[old.member_id]
        self.members[new.member_id] = new
        self.target[new.member_id] = self.target.pop(old.member_id, set())
        if streams != old.streams:
            self._rebalance()
        return new

    def _remove(self, member_ids: list[str]) -> None:
        for member_id in member_ids:
            del self.members[member_id]
            self.target.pop(member_id, None)
        self._rebalance()

    # ------------------------------------------------------------------ helpers

    def _member(self, member_id: str) -> Member:
        member = self.members.get(member_id)
        if member is None:
            raise FencedMemberError(
                f"group {self.group} has no member {member_id} (left or expired): rejoin"
            )
        return member

    def _by_instance(self, instance_id: str | None) -> Member | None:
        if instance_id is None:
            return None
        return next((m for m in self.members.values() if m.instance_id == instance_id), None)

    def _fresh_id(self) -> str:
        member_id = self._new_id()
        if member_id in self.members:
            raise LiftlogError(f"member id factory returned {member_id}, already in use")
        return member_id

    def _exists(self, tp: TopicPartition) -> bool:
        return 0 <= tp[1] < self.partition_counts.get(tp[0], 0)

    def _session_timeout(self, requested: int | None) -> int:
        limits = self.limits
        timeout = limits.default_session_timeout_ms if requested is None else requested
        if not limits.min_session_timeout_ms <= timeout <= limits.max_session_timeout_ms:
            raise InvalidRequestError(
                f"session_timeout_ms {timeout} is outside [{limits.min_session_timeout_ms}, "
                f"{limits.max_session_timeout_ms}]"
            )
        return timeout

    def _view(self, member: Member) -> MemberView:
        target = self.target.get(member.member_id, set())
        return MemberView(
            member_id=member.member_id,
            member_epoch=member.member_epoch,
            group_epoch=self.group_epoch,
            assigned=_by_stream(member.assigned),
            revoking=_by_stream(member.revoking),
            pending=_by_stream(target - set(member.assigned)),
            heartbeat_interval_ms=min(
                self.limits.heartbeat_interval_ms, member.session_timeout_ms // 3
            ),
        )

    # ------------------------------------------------------------------ record

    def to_json(self) -> GroupRecord:
        """The group metadata record's value (key ``"\\0group\\0<group>"``), ``{"v": 1, ...}``."""
        return {
            "v": METADATA_VERSION,
            "group": self.group,
            "group_epoch": self.group_epoch,
            "assignment_epoch": self.assignment_epoch,
            "partition_counts": dict(sorted(self.partition_counts.items())),
            "members": [self._member_json(self.members[m]) for m in sorted(self.members)],
        }

    def _member_json(self, m: Member) -> MemberRecord:
        epochs: dict[str, dict[str, int]] = {}
        for (stream, partition), epoch in sorted({**m.assigned, **m.revoking}.items()):
            epochs.setdefault(stream, {})[str(partition)] = epoch
        return {
            "member_id": m.member_id,
            "instance_id": m.instance_id,
            "streams": list(m.streams),
            "session_timeout_ms": m.session_timeout_ms,
            "member_epoch": m.member_epoch,
            "assigned": _by_stream(m.assigned),
            "revoking": _by_stream(m.revoking),
            "assignment_epochs": epochs,
            "target": _by_stream(self.target.get(m.member_id, set())),
            "client_id": m.client.client_id,
            "client_host": m.client.client_host,
        }

    @classmethod
    def from_json(
        cls,
        value: JsonMapping,
        *,
        now_ms: int,
        limits: GroupLimits = GroupLimits(),
        id_factory: Callable[[], str] = random_member_id,
    ) -> GroupState:
        """Rebuild a group from its metadata record; every session restarts at ``now_ms``."""
        if not isinstance(value, Mapping) or value.get("v") != METADATA_VERSION:
            raise CorruptRecordError(f"group metadata has an unknown version: {value!r:.200}")
        try:
            state = cls(str(value["group"]), limits=limits, id_factory=id_factory)
            state.group_epoch = int(value["group_epoch"])
            state.assignment_epoch = int(value["assignment_epoch"])
            state.partition_counts = {str(s): int(n) for s, n in value["partition_counts"].items()}
            for raw in value["members"]:
                member = _member_from_json(raw, now_ms)
                state.members[member.member_id] = member
                state.target[member.member_id] = set(_pairs(raw["target"]))
        except (KeyError, TypeError, ValueError, AttributeError, InvalidRequestError) as exc:
            raise CorruptRecordError(f"group metadata is malformed: {exc!r}") from exc
        return state


def _member_from_json(raw: JsonMapping, now_ms: int) -> Member:
    epochs = raw["assignment_epochs"]

    def held(by_stream: Mapping[str, Iterable[int]]) -> dict[TopicPartition, int]:
        return {(s, p): int(epochs[s][str(p)]) for s, p in _pairs(by_stream)}

    timeout = int(raw["session_timeout_ms"])
    return Member(
        member_id=str(raw["member_id"]),
        instance_id=None if raw["instance_id"] is None else str(raw["instance_id"]),
        streams=_subscription(raw["streams"]),
        session_timeout_ms=timeout,
        member_epoch=int(raw["member_epoch"]),
        assigned=held(raw["assigned"]),
        revoking=held(raw["revoking"]),
        client=MemberClient(
            _optional_str(raw.get("client_id")), _optional_str(raw.get("client_host"))
        ),
        deadline_ms=now_ms + timeout,
    )


def _optional_str(value: object) -> str | None:
    """A member field records written before it existed do not carry (None)."""
    return None if value is None else str(value)


def _subscription(streams: Iterable[str]) -> tuple[str, ...]:
    """Sorted, de-duplicated stream names; a member must subscribe to at least one."""
    subscription = tuple(sorted(set(streams)))
    if not subscription or not all(isinstance(s, str) and s for s in subscription):
        raise InvalidRequestError("a group member must subscribe to at least one named stream")
    return subscription


def _pairs(by_stream: Mapping[str, Iterable[int]]) -> list[TopicPartition]:
    return [(str(stream), int(p)) for stream, ps in by_stream.items() for p in ps]


def _by_stream(tps: Iterable[TopicPartition]) -> ByStream:
    out: ByStream = {}
    for stream, partition in sorted(tps):
        out.setdefault(stream, []).append(partition)
    return out
