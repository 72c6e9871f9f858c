"""Publishes sent to a node that does not lead the partition: forwarded to the leader over NATS
in Liftbridge's envelope, acked back to the node, answered as if it led."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import pytest

from liftlog.embedded.node import NodeProcess
from spark_log.liftbridge import api_pb2 as pb
from tests.integration.conftest import create_stream, fetch, node_client
from tests.support.liftbridge_client import liftbridge_stub
from tests.support.waiting import wait_for

DEADLINE_S = 10.0
LAG_S = 30.0
"""Long enough that a stopped follower stays in the ISR for the whole missed-ack test."""
IN_FLIGHT = 300


@pytest.fixture(scope="module")
def cluster(make_module_node: Any) -> list[NodeProcess]:
    return [make_module_node(i, replica_lag_time_max_s=LAG_S) for i in (1, 2, 3)]


@pytest.fixture
def api(cluster: list[NodeProcess]) -> Iterator[Any]:
    with node_client(cluster[0].api_url) as client:
        yield client


def _leaders(created: dict[str, Any]) -> dict[int, int]:
    return {p["partition"]: p["leader"] for p in created["partitions"]}


def _other_than(cluster: list[NodeProcess], broker_id: int) -> NodeProcess:
    return next(n for n in cluster if n.broker_id != broker_id)


def _fetch_from_leader(cluster: list[NodeProcess], leader: int, name: str, p: int) -> Any:
    node = next(n for n in cluster if n.broker_id == leader)
    with node_client(node.api_url) as client:
        return fetch(client, name, p, max_records=IN_FLIGHT)["records"]


async def test_a_publish_to_another_nodes_partition_is_stored_there_and_fully_acked(
    cluster: list[NodeProcess], api: Any, stream_name: str
) -> None:
    leader = _leaders(create_stream(api, stream_name))[0]
    elsewhere = _other_than(cluster, leader)
    request = pb.PublishRequest(
        stream=stream_name,
        key=b"k",
        value=b"forwarded",
        headers={"h": b"v"},
        correlationId="f-1",
        ackPolicy=pb.ALL,
    )
    async with liftbridge_stub(elsewhere.config.advertised_liftbridge_address) as lb:
        ack = (await lb.Publish(request, timeout=DEADLINE_S)).ack
        fire_and_forget = await lb.Publish(pb.PublishRequest(stream=stream_name, value=b"ff"))
    assert not fire_and_forget.HasField("ack")
    assert (ack.stream, ack.offset, ack.correlationId, ack.ackPolicy) == (
        stream_name,
        0,
        "f-1",
        pb.ALL,
    )
    assert ack.partitionSubject == f"{stream_name}.in" and ack.commitTimestamp > 0

    def both() -> Any:
        records = _fetch_from_leader(cluster, leader, stream_name, 0)
        return records if len(records) == 2 else None

    records = wait_for(both, message="both forwarded records at the leader")
    assert [(r["key"], r["value"], r["headers"]) for r in records] == [
        ("k", "forwarded", {"h": "v"}),
        (None, "ff", {}),
    ]


async def test_a_forwarded_publish_with_a_wrong_expected_offset_is_refused(
    cluster: list[NodeProcess], api: Any, stream_name: str
) -> None:
    leader = _leaders(create_stream(api, stream_name, optimistic_concurrency_control=True))[0]
    elsewhere = _other_than(cluster, leader)
    async with liftbridge_stub(elsewhere.config.advertised_liftbridge_address) as lb:
        good = pb.PublishRequest(stream=stream_name, value=b"x", expectedOffset=0)
        assert (await lb.Publish(good, timeout=DEADLINE_S)).ack.offset == 0
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await lb.Publish(good, timeout=DEADLINE_S)
        assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert len(_fetch_from_leader(cluster, leader, stream_name, 0)) == 1


async def _requests(stream: str, partitions: int) -> AsyncIterator[pb.PublishRequest]:
    for i in range(IN_FLIGHT):
        yield pb.PublishRequest(
            stream=stream, partition=i % partitions, value=b"%d" % i, correlationId=f"c{i}"
        )
    yield pb.PublishRequest(stream=stream, partition=0, expectedOffset=7, correlationId="last")


async def test_publish_async_through_one_node_reaches_every_partitions_leader(
    cluster: list[NodeProcess], api: Any, stream_name: str
) -> None:
    leaders = _leaders(create_stream(api, stream_name, partitions=3))
    answers: dict[str, pb.PublishResponse] = {}
    async with liftbridge_stub(cluster[0].config.advertised_liftbridge_address) as lb:
        async for response in lb.PublishAsync(_requests(stream_name, 3), timeout=60):
            answers[response.correlationId] = response
    assert len(answers) == IN_FLIGHT + 1
    assert not any(a.HasField("asyncError") for a in answers.values())
    for p, leader in leaders.items():
        subject = stream_subject = f"{stream_name}.in"
        if p:
            subject = f"{stream_subject}.{p}"
        offsets = sorted(
            a.ack.offset for a in answers.values() if a.ack.partitionSubject == subject
        )
        assert offsets == list(range(len(offsets))) and offsets
        assert len(_fetch_from_leader(cluster, leader, stream_name, p)) == len(offsets)


async def test_an_ack_that_cannot_come_in_time_is_deadline_exceeded(
    cluster: list[NodeProcess], api: Any, stream_name: str
) -> None:
    """acks=all waits for the follower; stopped (and still in the ISR), it never fetches."""
    created = create_stream(api, stream_name, replication_factor=2)
    partition = created["partitions"][0]
    leader = next(n for n in cluster if n.broker_id == partition["leader"])
    follower = next(n for n in cluster if n.broker_id in partition["replicas"] and n is not leader)
    request = pb.PublishRequest(stream=stream_name, value=b"x", ackPolicy=pb.ALL)
    async with liftbridge_stub(leader.config.advertised_liftbridge_address) as lb:
        assert (await lb.Publish(request, timeout=DEADLINE_S)).ack.offset == 0
        follower.pause()
        try:
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await lb.Publish(request, timeout=1.0)
        finally:
            follower.resume()
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
