"""gufo-liftbridge, as published, against a 3-node cluster: streams, publishing, every start
position, cursors and metadata.

The client runs unchanged in its own venv (gufo-liftbridge 0.2.0 on grpcio 1.84.0 and protobuf
6.33.6, pinned in tests/support/client_venvs.py); each call is one run of
clients/gufo_client.py given every node's advertised gRPC address, as a user would configure it.
Its unary Publish sets no deadline, so (as on Liftbridge) it returns before the ack: what it
published is checked by reading it back; PublishAsync (``publish_bulk``) returns the acks.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from liftlog.embedded.node import NodeProcess
from tests.support.gufo_calls import brokers_of, bulk_records, gufo, gufo_error, start_cluster
from tests.support.stacks import plain_stack_only
from tests.support.waiting import wait_for

pytestmark = plain_stack_only("gufo-liftbridge speaks plaintext gRPC and sends no token")

NS_PER_MS = 1_000_000
SECOND_NS = 1_000_000_000


@pytest.fixture(scope="module")
def cluster(make_module_node: Any) -> list[NodeProcess]:
    return start_cluster(make_module_node)


@pytest.fixture(scope="module")
def brokers(cluster: list[NodeProcess]) -> str:
    return brokers_of(cluster)


@pytest.fixture
def stream(brokers: str, stream_name: str) -> str:
    """A stream of the test, 3 replicas, created through the client (which waits for it)."""
    assert gufo(brokers, "create", name=stream_name, replication_factor=3) == "created"
    return stream_name


def publish_acked(brokers: str, stream: str, prefix: str, count: int) -> list[dict[str, Any]]:
    """``count`` records through PublishAsync with AckPolicy.ALL; their acks."""
    responses = gufo(
        brokers,
        "publish_bulk",
        stream=stream,
        records=bulk_records(prefix, count),
        ack_policy="ALL",
    )
    assert [r["asyncError"] for r in responses] == [None] * count, responses
    return [r["ack"] for r in responses]


def values(messages: list[dict[str, Any]]) -> list[str]:
    return [m["value"] for m in messages]


def offsets(messages: list[dict[str, Any]]) -> list[int]:
    return [m["offset"] for m in messages]


def test_create_waits_for_the_stream_and_a_second_create_is_refused(
    brokers: str, stream_name: str
) -> None:
    assert gufo(brokers, "create", name=stream_name, partitions=2, replication_factor=3)
    described = gufo(brokers, "metadata", stream=stream_name)["streams"][stream_name]
    assert described["subject"] == stream_name
    assert sorted(described["partitions"]) == ["0", "1"]
    error = gufo_error(brokers, "create", name=stream_name, replication_factor=3)
    assert error["type"] == "ErrorAlreadyExists", error


def test_publish_bulk_acks_every_record_stored_in_the_order_sent(brokers: str, stream: str) -> None:
    sent = [f"b-c{i}" for i in range(20)]
    responses = gufo(
        brokers, "publish_bulk", stream=stream, records=bulk_records("b", 20), ack_policy="ALL"
    )
    assert sorted(r["correlationId"] for r in responses) == sorted(sent)  # each answered once
    assert [r["asyncError"] for r in responses] == [None] * 20
    acks = [r["ack"] for r in responses]
    assert [a["correlationId"] for a in acks] == [r["correlationId"] for r in responses]
    offset_of = {a["correlationId"]: a["offset"] for a in acks}
    # one PublishAsync stream to one partition is stored in the order it was sent
    assert [offset_of[c] for c in sent] == list(range(20))
    assert {a["stream"] for a in acks} == {stream}
    assert {a["ackError"] for a in acks} == {0}  # Ack.Error.OK
    assert {a["ackPolicy"] for a in acks} == {1}  # AckPolicy.ALL


def test_unary_publish_then_subscribe_from_earliest(brokers: str, stream: str) -> None:
    records = [
        {"value": f"u-{i}", "key": f"k-{i}", "headers": {"source": "unary", "n": str(i)}}
        for i in range(3)
    ]
    assert gufo(brokers, "publish", stream=stream, records=records, ack_policy="ALL") == 3
    started_ns = time.time_ns()
    got = gufo(brokers, "subscribe", stream=stream, start_position="EARLIEST", count=3)
    assert values(got) == ["u-0", "u-1", "u-2"]
    assert offsets(got) == [0, 1, 2]
    assert [m["key"] for m in got] == ["k-0", "k-1", "k-2"]
    assert [m["headers"].get("n") for m in got] == ["0", "1", "2"]
    assert {m["headers"].get("source") for m in got} == {"unary"}
    assert {m["partition"] for m in got} == {0}
    for message in got:  # Unix nanoseconds, from the last minute
        assert started_ns - 60 * SECOND_NS < message["timestamp"] <= started_ns + SECOND_NS


def test_publish_to_a_partition_and_subscribe_to_it(brokers: str, stream_name: str) -> None:
    assert gufo(brokers, "create", name=stream_name, partitions=2, replication_factor=3)
    records = [{"value": f"p1-{i}", "partition": 1} for i in range(2)]
    assert gufo(brokers, "publish", stream=stream_name, records=records) == 2
    got = gufo(
        brokers, "subscribe", stream=stream_name, partition=1, start_position="EARLIEST", count=2
    )
    assert values(got) == ["p1-0", "p1-1"]
    assert {m["partition"] for m in got} == {1}


def test_subscribe_from_an_offset(brokers: str, stream: str) -> None:
    publish_acked(brokers, stream, "o", 10)
    got = gufo(brokers, "subscribe", stream=stream, start_offset=6, count=4)
    assert offsets(got) == [6, 7, 8, 9]
    assert values(got) == ["o-6", "o-7", "o-8", "o-9"]


def test_subscribe_from_the_latest_record(brokers: str, stream: str) -> None:
    publish_acked(brokers, stream, "l", 5)
    got = gufo(brokers, "subscribe", stream=stream, start_position="LATEST", count=1)
    assert (offsets(got), values(got)) == ([4], ["l-4"])


def test_subscribe_from_a_timestamp(brokers: str, stream: str) -> None:
    publish_acked(brokers, stream, "before", 3)
    earliest = gufo(brokers, "subscribe", stream=stream, start_position="EARLIEST", count=3)
    last_before = earliest[-1]["timestamp"]
    # the records carry milliseconds: the next batch is stamped at least 2 ms later
    wait_for(lambda: time.time_ns() > last_before + 2 * NS_PER_MS, message="2 ms to pass")
    publish_acked(brokers, stream, "after", 3)
    everything = gufo(brokers, "subscribe", stream=stream, start_position="EARLIEST", count=6)
    first_after = everything[3]["timestamp"]
    assert first_after > last_before
    start = (last_before + first_after) // 2  # strictly between the two batches
    got = gufo(brokers, "subscribe", stream=stream, start_timestamp_ns=start, count=3)
    assert values(got) == ["after-0", "after-1", "after-2"]
    assert offsets(got) == [3, 4, 5]


def test_subscribe_new_only_skips_what_was_there(brokers: str, stream: str) -> None:
    publish_acked(brokers, stream, "old", 5)
    answer = gufo(brokers, "subscribe_new", stream=stream, count=3, prefix="new")
    got = answer["messages"]
    assert all(v.startswith("new-") for v in values(got)), got
    first = answer["sent"].index(got[0]["value"])  # probes sent before it stood are skipped
    assert values(got) == answer["sent"][first : first + 3]
    assert offsets(got) == [5 + first, 6 + first, 7 + first]


def test_cursors_set_get_and_resume(brokers: str, stream: str) -> None:
    publish_acked(brokers, stream, "c", 8)
    assert gufo(brokers, "get_cursor", stream=stream, partition=0, cursor_id="fresh") == -1
    # the client stores the offset after the one it is given (the next to read)
    assert gufo(brokers, "set_cursor", stream=stream, partition=0, cursor_id="app", offset=4)
    assert gufo(brokers, "get_cursor", stream=stream, partition=0, cursor_id="app") == 5
    got = gufo(
        brokers, "subscribe", stream=stream, start_position="RESUME", cursor_id="app", count=3
    )
    assert offsets(got) == [5, 6, 7]
    assert gufo(brokers, "set_cursor", stream=stream, partition=0, cursor_id="app", offset=6)
    assert gufo(brokers, "get_cursor", stream=stream, partition=0, cursor_id="app") == 7


def test_metadata_names_every_broker_and_each_partition_s_state(
    brokers: str, cluster: list[NodeProcess], stream: str
) -> None:
    publish_acked(brokers, stream, "m", 6)
    answer = gufo(brokers, "metadata")
    advertised = {str(n.broker_id): n.config.advertised_liftbridge_address for n in cluster}
    assert {b["id"]: f"{b['host']}:{b['port']}" for b in answer["brokers"]} == advertised
    partition = answer["streams"][stream]["partitions"]["0"]
    assert partition["leader"] in advertised
    assert sorted(partition["replicas"]) == sorted(advertised)
    assert sorted(partition["isr"]) == sorted(advertised)
    # Liftbridge's high watermark and newest offset are offsets of records: the last ones
    assert (partition["high_watermark"], partition["newest_offset"]) == (5, 5)
    assert partition["paused"] is False
    assert answer["leaders"][f"{stream}/0"] == advertised[partition["leader"]]
    # FetchPartitionMetadata, which the client sends to the partition's leader
    own = gufo(brokers, "partition_metadata", stream=stream, partition=0)
    assert _in_order(own) == _in_order(partition)


def test_delete_stream(brokers: str, stream: str) -> None:
    assert gufo(brokers, "delete", name=stream) == "deleted"
    wait_for(
        lambda: stream not in gufo(brokers, "metadata")["streams"],
        timeout_s=20,
        message=f"{stream} gone from the metadata",
    )
    error = gufo_error(brokers, "delete", name=stream)
    assert error["type"] == "ErrorNotFound", error


def _in_order(partition: dict[str, Any]) -> dict[str, Any]:
    """Partition metadata with its broker lists sorted (their order carries no meaning)."""
    return {k: sorted(v) if isinstance(v, list) else v for k, v in partition.items()}
