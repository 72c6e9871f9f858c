"""Which replica may serve a subscription, and a record as Liftbridge's ``Message``."""

from __future__ import annotations

import pytest

from ingest.liftbridge.subscribe import fetch_limits, record_message
from ingest.liftbridge.subscribe_access import check_serves
from ingest.replication.partition_state import ROLE_FOLLOWER, ROLE_LEADER, Partition
from spark_log.config import IngestConfig
from spark_log.errors import NotLeaderError
from spark_log.liftbridge import api_pb2 as pb
from spark_log.log import Record


def partition(role: str, isr: list[int]) -> Partition:
    state = Partition(
        broker_id=2, stream="s", partition=0, min_isr=1, leader_epoch=1, isr=isr, leader_id=1
    )
    state.role = role
    return state


def test_the_leader_serves_with_or_without_read_isr_replica() -> None:
    check_serves(partition(ROLE_LEADER, [2]), read_isr_replica=False)
    check_serves(partition(ROLE_LEADER, [2]), read_isr_replica=True)


def test_a_follower_serves_only_read_isr_replica_and_only_in_the_isr() -> None:
    check_serves(partition(ROLE_FOLLOWER, [1, 2]), read_isr_replica=True)
    with pytest.raises(NotLeaderError, match="does not lead"):
        check_serves(partition(ROLE_FOLLOWER, [1, 2]), read_isr_replica=False)
    with pytest.raises(NotLeaderError, match="not in the ISR"):
        check_serves(partition(ROLE_FOLLOWER, [1]), read_isr_replica=True)


def test_a_fenced_leader_does_not_serve() -> None:
    fenced = partition(ROLE_LEADER, [2])
    fenced.fenced_reason = "ZooKeeper session in doubt"
    with pytest.raises(NotLeaderError):
        check_serves(fenced, read_isr_replica=False)


def test_a_record_becomes_a_message_with_nanoseconds_and_an_empty_absent_key() -> None:
    record = Record(7, 1_700_000_000_123, None, b"v", [("h", b"1")], "orders.in")
    message = record_message(record, "orders", 3)
    assert message == pb.Message(
        offset=7,
        key=b"",
        value=b"v",
        timestamp=1_700_000_000_123_000_000,
        stream="orders",
        partition=3,
        subject="orders.in",
        headers={"h": b"1"},
    )


def test_batches_are_a_rest_fetchs_default_within_the_nodes_limits() -> None:
    limits = fetch_limits(IngestConfig(max_fetch_records=50, max_wait_ms=2000))
    assert (limits.max_records, limits.max_bytes, limits.wait_ms) == (50, 1024 * 1024, 2000)
    assert fetch_limits(IngestConfig()).max_records == 1000
