"""Replica assignment follows Kafka's rack-unaware round robin."""

from __future__ import annotations

from collections import Counter

import pytest

from coordinator.assignment import assign_replicas
from coordinator.errors import InvalidReplicationFactorError
from spark_log.errors import InvalidRequestError


def test_matches_kafkas_reference_assignment():
    # Kafka's AdminZkClientTest.testReplicaAssignment: 5 brokers, 10 partitions, rf 3, start 0.
    expected = [
        [0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 0], [4, 0, 1],
        [0, 2, 3], [1, 3, 4], [2, 4, 0], [3, 0, 1], [4, 1, 2],
    ]  # fmt: skip
    assert assign_replicas(10, 3, [0, 1, 2, 3, 4], start_index=0) == expected


def test_single_broker_single_replica():
    assert assign_replicas(3, 1, [1]) == [[1], [1], [1]]


def test_leaders_are_spread_evenly():
    assignment = assign_replicas(6, 2, [1, 2, 3])
    assert Counter(replicas[0] for replicas in assignment) == {1: 2, 2: 2, 3: 2}


def test_replicas_of_a_partition_are_distinct_and_of_the_asked_size():
    for replicas in assign_replicas(20, 3, [1, 2, 3, 4, 5], start_index=2):
        assert len(replicas) == 3
        assert len(set(replicas)) == 3


def test_followers_of_one_leader_spread_over_the_other_brokers():
    assignment = assign_replicas(12, 2, [1, 2, 3, 4])
    followers_of_1 = {replicas[1] for replicas in assignment if replicas[0] == 1}
    assert followers_of_1 == {2, 3, 4}


def test_broker_ids_are_sorted_and_need_not_be_contiguous():
    assert assign_replicas(3, 1, [7, 3, 5]) == [[3], [5], [7]]


def test_start_index_moves_the_first_leader():
    assert [r[0] for r in assign_replicas(3, 1, [1, 2, 3], start_index=1)] == [2, 3, 1]
    assert assign_replicas(2, 1, [1, 2, 3], start_index=4) == assign_replicas(
        2, 1, [1, 2, 3], start_index=4 % 3
    )


def test_replication_factor_minus_one_means_every_broker():
    assert assign_replicas(2, -1, [1, 2, 3]) == [[1, 2, 3], [2, 3, 1]]


def test_replication_factor_larger_than_brokers_is_refused_like_kafka():
    with pytest.raises(InvalidReplicationFactorError) as raised:
        assign_replicas(1, 3, [1])
    assert "replication factor 3 larger than available brokers 1" in str(raised.value)
    assert isinstance(raised.value, InvalidRequestError)
    assert raised.value.code == "invalid_request"


def test_no_brokers_is_refused():
    with pytest.raises(InvalidReplicationFactorError, match="available brokers 0"):
        assign_replicas(1, 1, [])
    with pytest.raises(InvalidReplicationFactorError, match="no available brokers"):
        assign_replicas(1, -1, [])


@pytest.mark.parametrize(
    ("partitions", "factor", "brokers", "start", "match"),
    [
        (0, 1, [1], 0, "partitions must be larger than 0"),
        (1, 0, [1], 0, "replication factor must be larger than 0"),
        (1, 1, [1, 1], 0, "duplicate broker ids"),
        (1, 1, [1], -1, "start_index"),
    ],
)
def test_invalid_arguments_are_refused(partitions, factor, brokers, start, match):
    with pytest.raises(InvalidRequestError, match=match):
        assign_replicas(partitions, factor, brokers, start_index=start)
