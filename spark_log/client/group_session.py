"""A group member's client-side bookkeeping, with no I/O: what it owns, what it processed,
what to commit, and how a coordinator answer changes its partitions.

Kept apart from ``spark_log.client.group_consumer`` (tasks, REST, the iterator) so each rule is
unit-tested without a server: a committed offset is the last offset processed (the member
resumes at the next one), ``owned`` is what the member holds now (assigned partitions it
accepted plus those it is still revoking), and a partition leaves ``owned`` only once its
processed offsets were committed (that omission is the revocation ack).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from spark_log.client.positions import StartName
from spark_log.errors import (
    CoordinatorLoadingError,
    InvalidRequestError,
    LiftlogError,
    NoCommittedOffsetError,
    NotEnoughReplicasError,
    NotLeaderError,
    RequestTimeoutError,
    UnavailableError,
)

OffsetReset = Literal["latest", "earliest", "none"]
OFFSET_RESETS: tuple[OffsetReset, ...] = ("latest", "earliest", "none")
RETRIABLE_STATUSES = frozenset({421, 503})
BACKOFF_BASE_S = 0.1
BACKOFF_CAP_S = 1.0


class StreamPartition(NamedTuple):
    """One partition of one stream (Kafka's TopicPartition); what the rebalance callbacks get."""

    stream: str
    partition: int


def by_stream(partitions: Iterable[StreamPartition]) -> dict[str, list[int]]:
    """``{stream: [partition, ...]}``, sorted: the wire shape of ``owned`` and assignments."""
    out: dict[str, list[int]] = {}
    for stream, partition in sorted(partitions):
        out.setdefault(stream, []).append(partition)
    return out


def partitions_of(wire: Mapping[str, Iterable[int]]) -> set[StreamPartition]:
    return {StreamPartition(str(s), int(p)) for s, ps in wire.items() for p in ps}


@dataclass(frozen=True)
class AssignmentChange:
    """What a join or heartbeat answer asks of the member: start ``added``, give up ``revoked``."""

    added: list[StreamPartition]
    revoked: list[StreamPartition]


def diff_assignment(
    active: Iterable[StreamPartition],
    revoking: Iterable[StreamPartition],
    assigned: Mapping[str, Iterable[int]],
) -> AssignmentChange:
    """Compare what the member consumes (``active``) and is still giving up (``revoking``)
    with the coordinator's ``assigned``.

    Every active partition outside ``assigned`` is revoked, whether the answer lists it in
    ``revoking`` or dropped it outright (its stream was deleted). A partition still being
    revoked locally is not taken again before its ack: the coordinator hands it back in a
    later answer if it is still the member's.
    """
    now = set(active)
    pending = set(revoking)
    target = partitions_of(assigned)
    return AssignmentChange(
        added=sorted(target - now - pending),
        revoked=sorted(now - target),
    )


def owned_wire(
    active: Iterable[StreamPartition], revoking: Iterable[StreamPartition]
) -> dict[str, list[int]]:
    """A heartbeat's ``owned``: what the member holds, revocations not yet finished included."""
    return by_stream(set(active) | set(revoking))


@dataclass
class OffsetBook:
    """Processed and committed offsets (the last offset handled) of the partitions held."""

    processed: dict[StreamPartition, int] = field(default_factory=dict)
    committed: dict[StreamPartition, int | None] = field(default_factory=dict)

    def start(self, tp: StreamPartition, committed: int | None) -> None:
        """A partition was assigned with this committed offset (None: never committed)."""
        self.committed[tp] = committed
        self.processed.pop(tp, None)

    def process(self, tp: StreamPartition, offset: int) -> None:
        """The record at ``offset`` was handled; offsets only move forward."""
        if offset > self.processed.get(tp, -1):
            self.processed[tp] = offset

    def to_commit(self, held: Iterable[StreamPartition]) -> dict[StreamPartition, int]:
        """Processed offsets of held partitions beyond what is already committed."""
        out: dict[StreamPartition, int] = {}
        for tp in sorted(set(held)):
            offset = self.processed.get(tp)
            committed = self.committed.get(tp)
            if offset is not None and (committed is None or offset > committed):
                out[tp] = offset
        return out

    def mark_committed(self, offsets: Mapping[StreamPartition, int]) -> None:
        for tp, offset in offsets.items():
            current = self.committed.get(tp)
            if current is None or offset > current:
                self.committed[tp] = offset

    def forget(self, partitions: Iterable[StreamPartition]) -> None:
        for tp in partitions:
            self.processed.pop(tp, None)
            self.committed.pop(tp, None)


def check_offset_reset(value: str) -> OffsetReset:
    for name in OFFSET_RESETS:
        if value == name:
            return name
    raise InvalidRequestError(f"auto_offset_reset must be one of {OFFSET_RESETS}, got {value!r}")


def start_position(
    tp: StreamPartition, committed: int | None, reset: OffsetReset
) -> int | StartName:
    """Where a newly assigned partition is read from: the offset after the committed one,
    else ``reset``'s named start (``"latest"`` is Kafka's: the high watermark, ``new-only``)."""
    if committed is not None:
        return committed + 1
    if reset == "earliest":
        return "earliest"
    if reset == "latest":
        return "new-only"
    raise NoCommittedOffsetError(
        f"{tp.stream}/{tp.partition} has no committed offset and auto_offset_reset is 'none'"
    )


def retriable(exc: LiftlogError) -> bool:
    """A failure a coordinator or leader change explains: the same request may succeed at
    another node, or at this one a moment later (connection errors, 421, 503)."""
    kinds = (
        UnavailableError,
        CoordinatorLoadingError,
        NotLeaderError,
        NotEnoughReplicasError,
        RequestTimeoutError,
    )
    return isinstance(exc, kinds) or exc.status in RETRIABLE_STATUSES


def backoff_s(attempt: int) -> float:
    """Exponential backoff between retries, capped well under any session timeout."""
    return float(min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** max(0, attempt)))
