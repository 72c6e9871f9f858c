"""FetchMetadata and FetchPartitionMetadata: brokers at their gRPC addresses, streams as their
leaders report them (Liftbridge's offsets: the last record, -1 when none), groups with their
coordinator, answered alike by every node of a cluster."""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Iterator
from typing import Any

import grpc
import httpx
import pytest

from liftlog.embedded.node import NodeProcess
from spark_log.encryption_config import EncryptionConfig
from spark_log.liftbridge import api_pb2 as pb
from spark_log.liftbridge import api_pb2_grpc
from tests.integration.conftest import NodeFactory, node_client
from tests.support.liftbridge_client import liftbridge_stub
from tests.support.waiting import wait_for, wait_for_async

Stub = api_pb2_grpc.APIStub
MASTER_KEY = base64.b64encode(bytes(range(32))).decode()


async def refused(call: Awaitable[Any]) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await call
    return raised.value


def publish(api: httpx.Client, name: str, partition: int, count: int) -> None:
    resp = api.post(
        f"/v1/streams/{name}/partitions/{partition}/records?encoding=utf-8",
        json={"records": [{"value": str(i)} for i in range(count)]},
    )
    assert resp.status_code == 200, resp.text


async def test_brokers_are_listed_at_their_grpc_address(lb: Stub, node: NodeProcess) -> None:
    host, _, port = node.config.advertised_liftbridge_address.rpartition(":")
    metadata = await lb.FetchMetadata(pb.FetchMetadataRequest())
    assert [(b.id, b.host, b.port) for b in metadata.brokers] == [("1", host, int(port))]


async def test_a_stream_as_its_leader_reports_it(
    lb: Stub, api: httpx.Client, stream_name: str
) -> None:
    await lb.CreateStream(
        pb.CreateStreamRequest(name=stream_name, subject=stream_name, partitions=2)
    )
    publish(api, stream_name, 1, 3)
    created_ms = api.get(f"/v1/streams/{stream_name}").json()["created_at_ms"]

    metadata = await lb.FetchMetadata(pb.FetchMetadataRequest(streams=[stream_name]))
    (stream,) = metadata.streamMetadata
    assert (stream.name, stream.subject, stream.error) == (
        stream_name,
        stream_name,
        pb.StreamMetadata.OK,
    )
    assert stream.creationTimestamp == created_ms * 1_000_000
    empty, written = stream.partitions[0], stream.partitions[1]
    assert (empty.id, empty.leader, list(empty.replicas), list(empty.isr)) == (0, "1", ["1"], ["1"])
    assert (empty.highWatermark, empty.newestOffset) == (-1, -1)
    assert (written.highWatermark, written.newestOffset) == (2, 2)
    assert not written.paused and not written.readonly

    one = await lb.FetchPartitionMetadata(
        pb.FetchPartitionMetadataRequest(stream=stream_name, partition=1)
    )
    assert one.metadata == written
    broker = metadata.brokers[0]
    assert broker.partitionCount >= 2 and broker.leaderCount >= 2


async def test_unknown_streams_and_partitions(lb: Stub, stream_name: str) -> None:
    metadata = await lb.FetchMetadata(pb.FetchMetadataRequest(streams=[stream_name]))
    assert [(m.name, m.error) for m in metadata.streamMetadata] == [
        (stream_name, pb.StreamMetadata.UNKNOWN_STREAM)
    ]
    no_stream = await refused(
        lb.FetchPartitionMetadata(pb.FetchPartitionMetadataRequest(stream=stream_name))
    )
    assert no_stream.code() == grpc.StatusCode.NOT_FOUND
    await lb.CreateStream(pb.CreateStreamRequest(name=stream_name, subject=stream_name))
    no_partition = await refused(
        lb.FetchPartitionMetadata(pb.FetchPartitionMetadataRequest(stream=stream_name, partition=3))
    )
    assert no_partition.code() == grpc.StatusCode.NOT_FOUND


async def test_groups_and_every_stream_with_cursors(
    lb: Stub, api: httpx.Client, stream_name: str
) -> None:
    """A group's coordinator leads its ``__cursors`` partition; with no stream named, every
    stream is listed, ``__cursors`` too (clients look up its leaders there)."""
    await lb.CreateStream(pb.CreateStreamRequest(name=stream_name, subject=stream_name))
    group = f"g-{stream_name}"
    joined = api.post(f"/v1/groups/{group}/members", json={"streams": [stream_name]})
    assert joined.status_code == 200, joined.text
    epoch = api.get(f"/v1/groups/{group}").json()["group_epoch"]

    metadata = await lb.FetchMetadata(pb.FetchMetadataRequest(groups=[group, f"{group}-none"]))
    known, unknown = metadata.groupMetadata
    assert (known.groupId, known.coordinator, known.epoch, known.error) == (
        group,
        "1",
        epoch,
        pb.ConsumerGroupMetadata.OK,
    )
    assert (unknown.groupId, unknown.error) == (
        f"{group}-none",
        pb.ConsumerGroupMetadata.UNKNOWN_GROUP,
    )
    listed = {m.name: m for m in metadata.streamMetadata}
    assert stream_name in listed and "__cursors" in listed
    assert all(p.leader == "1" for p in listed["__cursors"].partitions.values())


@pytest.fixture(scope="module")
def cluster(make_module_node: NodeFactory) -> Iterator[list[NodeProcess]]:
    """Three nodes, every one able to encrypt."""
    key = EncryptionConfig(master_key=MASTER_KEY)
    nodes = [make_module_node(b, encryption=key) for b in (1, 2, 3)]
    with node_client(nodes[0].api_url) as api:
        wait_for(
            lambda: len(api.get("/v1/cluster").json()["brokers"]) == 3,
            30,
            message="three live brokers",
        )
    yield nodes


async def test_every_node_of_a_cluster_answers_the_same_metadata(
    cluster: list[NodeProcess], stream_name: str
) -> None:
    """-1 puts a replica on every live broker; each node lists the three brokers at their own
    gRPC addresses, with the loads and leaders the controller recorded."""
    addresses = {str(n.config.broker_id): n.config.advertised_liftbridge_address for n in cluster}
    request = pb.CreateStreamRequest(
        name=stream_name, subject=stream_name, partitions=3, replicationFactor=-1
    )
    request.encryption.value = True
    async with liftbridge_stub(addresses["1"]) as first:
        await first.CreateStream(request)
    with node_client(cluster[0].api_url) as api:
        described = api.get(f"/v1/streams/{stream_name}").json()
    assert described["replication_factor"] == 3 and described["encryption"] is True
    leaders = {p["partition"]: str(p["leader"]) for p in described["partitions"]}

    for broker_id, address in addresses.items():
        async with liftbridge_stub(address) as stub:
            metadata = await wait_for_async(
                lambda stub=stub: _with_offsets(stub, stream_name),
                message=f"broker {broker_id} to report every leader's offsets",
            )
            brokers = {b.id: f"{b.host}:{b.port}" for b in metadata.brokers}
            assert brokers == addresses
            (stream,) = [m for m in metadata.streamMetadata if m.name == stream_name]
            assert {p.id: p.leader for p in stream.partitions.values()} == leaders
            assert all(sorted(p.replicas) == ["1", "2", "3"] for p in stream.partitions.values())
            every = await stub.FetchMetadata(pb.FetchMetadataRequest())
            _assert_loads_match(every)
            partition = await stub.FetchPartitionMetadata(
                pb.FetchPartitionMetadataRequest(stream=stream_name, partition=2)
            )
            assert partition.metadata.leader == leaders[2]
            assert partition.metadata.highWatermark == -1


async def _with_offsets(stub: Stub, name: str) -> pb.FetchMetadataResponse | None:
    metadata = await stub.FetchMetadata(pb.FetchMetadataRequest(streams=[name]))
    partitions = metadata.streamMetadata[0].partitions.values()
    if len(metadata.brokers) == 3 and all(p.leader and p.isr for p in partitions):
        return metadata
    return None


def _assert_loads_match(metadata: pb.FetchMetadataResponse) -> None:
    """Each broker's counts are the replicas and leaderships the streams listed show."""
    replicas: dict[str, int] = {}
    leads: dict[str, int] = {}
    for stream in metadata.streamMetadata:
        for p in stream.partitions.values():
            for r in p.replicas:
                replicas[r] = replicas.get(r, 0) + 1
            if p.leader:
                leads[p.leader] = leads.get(p.leader, 0) + 1
    for broker in metadata.brokers:
        assert broker.partitionCount == replicas.get(broker.id, 0)
        assert broker.leaderCount == leads.get(broker.id, 0)
