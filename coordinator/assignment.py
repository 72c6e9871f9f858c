"""Replica assignment: Kafka's rack-unaware round-robin with shifted followers.

Leaders (first replicas) go round-robin over the sorted brokers from ``start_index``; each
partition's followers follow its leader at a shift that grows by one every full round, so the
followers of one broker's partitions spread over all other brokers instead of always landing
on its right-hand neighbour (Kafka's ``AdminUtils.assignReplicasToBrokersRackUnaware``).
A pure function: the caller chooses ``start_index`` (Kafka picks it at random).
"""

from __future__ import annotations

from coordinator.errors import InvalidReplicationFactorError
from spark_log.errors import InvalidRequestError

ALL_BROKERS = -1


def assign_replicas(
    partitions: int, replication_factor: int, broker_ids: list[int], start_index: int = 0
) -> list[list[int]]:
    """Replicas of partitions 0..partitions-1, each list led by its preferred leader.

    ``replication_factor`` -1 means every broker. Refused (InvalidReplicationFactorError) when
    more replicas are asked for than there are brokers.
    """
    brokers = _checked_brokers(broker_ids)
    if replication_factor == ALL_BROKERS and not brokers:
        raise InvalidReplicationFactorError("no available brokers to place replicas on")
    factor = len(brokers) if replication_factor == ALL_BROKERS else replication_factor
    _check_counts(partitions, factor, len(brokers))
    if start_index < 0:
        raise InvalidRequestError(f"start_index must be >= 0, got {start_index}")
    count = len(brokers)
    shift = start_index
    assignment = []
    for partition in range(partitions):
        if partition > 0 and partition % count == 0:
            shift += 1
        first = (partition + start_index) % count
        followers = [brokers[_follower_index(first, shift, j, count)] for j in range(factor - 1)]
        assignment.append([brokers[first], *followers])
    return assignment


def _follower_index(first: int, shift: int, follower: int, count: int) -> int:
    """Kafka's replicaIndex: never the leader's own index, spread by the shift."""
    return (first + 1 + (shift + follower) % (count - 1)) % count


def _checked_brokers(broker_ids: list[int]) -> list[int]:
    brokers = sorted(broker_ids)
    if len(set(brokers)) != len(brokers):
        raise InvalidRequestError(f"duplicate broker ids in {broker_ids}")
    return brokers


def _check_counts(partitions: int, factor: int, brokers: int) -> None:
    if partitions <= 0:
        raise InvalidRequestError("number of partitions must be larger than 0")
    if factor <= 0:
        raise InvalidReplicationFactorError("replication factor must be larger than 0")
    if factor > brokers:
        raise InvalidReplicationFactorError(
            f"replication factor {factor} larger than available brokers {brokers}"
        )
