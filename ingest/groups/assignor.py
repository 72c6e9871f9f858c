"""The server-side assignor of consumer groups: a sticky, per-stream, balanced assignment.

KIP-848 moved partition assignment from the group leader (a client) to the coordinator, which
computes a *target assignment* whenever the group epoch bumps and then reconciles each member
towards it. This module is that computation and nothing else: no clock, no I/O, no state, so
the coordinator and the unit tests call the same function.

Why sticky: every partition that changes owner costs a revocation round trip, a commit and a
re-fetch from the committed offset (duplicates up to the uncommitted window). Liftbridge
recomputes from scratch ("TODO avoid unnecessary reassignments"); Kafka's ``uniform``/sticky
assignors keep what they can. Here every (partition -> owner) pair whose owner is still live
and subscribed is kept unless that owner is above its quota, so a join moves at most the new
member's share and a leave moves only the leaver's partitions.

Streams are balanced independently (Kafka's range/uniform per topic): consumers of a group
usually subscribe to the same streams, and a per-stream rule keeps each stream's load spread
even when partition counts differ a lot between streams.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

MemberId = str
StreamName = str
TopicPartition = tuple[StreamName, int]
Assignment = dict[MemberId, dict[StreamName, list[int]]]


def sticky_assign(
    members: Mapping[MemberId, Iterable[StreamName]],
    partition_counts: Mapping[StreamName, int],
    current: Mapping[TopicPartition, MemberId],
) -> Assignment:
    """The target assignment of a group.

    ``members`` maps each live member to the streams it subscribes to; ``partition_counts``
    holds the partition count of every existing stream (a subscribed stream missing from it
    gets nothing); ``current`` is the previous target owner of each partition (stale owners,
    deleted partitions and unsubscribed owners are ignored).

    Every member is a key of the result; its map lists, sorted, the partitions of each stream
    it gets, with streams where it gets none left out. The result depends only on the inputs
    (no iteration-order or hash dependence), so a new coordinator recomputes the same answer.
    """
    result: Assignment = {member: {} for member in sorted(members)}
    subscriptions = {member: frozenset(streams) for member, streams in members.items()}
    for stream in sorted(partition_counts):
        subscribers = sorted(m for m, streams in subscriptions.items() if stream in streams)
        count = partition_counts[stream]
        if not subscribers or count <= 0:
            continue
        for member, partitions in _assign_stream(stream, count, subscribers, current).items():
            if partitions:
                result[member][stream] = partitions
    return result


def _assign_stream(
    stream: StreamName,
    count: int,
    subscribers: list[MemberId],
    current: Mapping[TopicPartition, MemberId],
) -> dict[MemberId, list[int]]:
    """One stream: keep, strip above quota, then fill the least-loaded (see ``sticky_assign``)."""
    kept = _kept_owners(stream, count, subscribers, current)
    quotas = _quotas(count, kept)
    for member in subscribers:
        del kept[member][quotas[member] :]  # strip the highest partitions above the quota
    unowned = sorted(set(range(count)) - {p for owned in kept.values() for p in owned})
    for partition in unowned:
        least_loaded = min(subscribers, key=lambda m: (len(kept[m]), m))
        kept[least_loaded].append(partition)
    return {member: sorted(owned) for member, owned in kept.items()}


def _kept_owners(
    stream: StreamName,
    count: int,
    subscribers: list[MemberId],
    current: Mapping[TopicPartition, MemberId],
) -> dict[MemberId, list[int]]:
    """The partitions of ``stream`` each subscriber owns now, ascending (others own nothing)."""
    kept: dict[MemberId, list[int]] = {member: [] for member in subscribers}
    for partition in range(count):
        owner = current.get((stream, partition))
        if owner is not None and owner in kept:
            kept[owner].append(partition)
    return kept


def _quotas(count: int, kept: Mapping[MemberId, list[int]]) -> dict[MemberId, int]:
    """How many partitions each subscriber may keep: ``floor`` or ``floor + 1``.

    ``count % n`` members may hold the ceiling. Giving those slots to the members that own the
    most now (ties by member id) minimises what must be stripped: a ceiling slot only saves a
    move for a member that owns more than the floor. The least-loaded fill afterwards brings
    every member to its floor or ceiling without exceeding the ceiling.
    """
    floor, ceiling_slots = divmod(count, len(kept))
    by_ownership = sorted(kept, key=lambda m: (-len(kept[m]), m))
    return {member: floor + (rank < ceiling_slots) for rank, member in enumerate(by_ownership)}


def owners_of(
    assignment: Mapping[MemberId, Mapping[StreamName, Iterable[int]]],
) -> dict[TopicPartition, MemberId]:
    """The ``current`` argument of the next ``sticky_assign`` call: partition -> owner."""
    return {
        (stream, partition): member
        for member, streams in assignment.items()
        for stream, partitions in streams.items()
        for partition in partitions
    }
