"""Publishes sent to the node that does not lead the partition, on the secured stack: a node
may not publish on streams' subjects over NATS there, so it calls the leader's own Liftbridge
API as the caller. Stored and acked for a principal allowed to publish, refused to any other,
in the order sent on a PublishAsync stream, and never forwarded twice."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest

from spark_log.liftbridge import api_pb2 as pb
from tests.integration.conftest import fetch
from tests.support.auth_stack import AuthCluster, start_secure_cluster
from tests.support.liftbridge_client import liftbridge_stub

STREAM_A = "lb-fwd-a"
STREAM_OCC = "lb-fwd-occ"
WRITER = "lb-fwd-writer"
READER = "lb-fwd-reader"
DEADLINE_S = 10.0
IN_ORDER = 500


@dataclass(frozen=True)
class Forwarding:
    cluster: AuthCluster
    writer_token: str
    reader_token: str
    leader: str
    """The gRPC address of the node leading stream A's partition."""
    elsewhere: str
    """The other node's."""
    elsewhere_occ: str
    """The node that does not lead stream OCC's partition (optimistic concurrency on)."""


@pytest.fixture(scope="module")
def forwarding() -> Iterator[Forwarding]:
    """Two secured nodes, stream A and stream OCC; ``WRITER`` may publish on both,
    ``READER`` only consume A. Broker ids count from 1 in the stack's node order."""
    for cluster in start_secure_cluster(nodes=2):
        leader = _create(cluster, STREAM_A)
        occ_leader = _create(cluster, STREAM_OCC, optimistic_concurrency_control=True)
        _, writer = cluster.new_token(WRITER)  # returns once every node knows it (and A)
        _, reader = cluster.new_token(READER)
        for name in (STREAM_A, STREAM_OCC):
            cluster.allow(WRITER, "publish", f"stream:{name}")
        cluster.allow(READER, "consume", f"stream:{STREAM_A}")
        addresses = cluster.grpc_addresses
        yield Forwarding(
            cluster,
            writer,
            reader,
            leader=addresses[leader - 1],
            elsewhere=addresses[2 - leader],
            elsewhere_occ=addresses[2 - occ_leader],
        )


def _create(cluster: AuthCluster, name: str, **spec: Any) -> int:
    """Create ``name``; the broker id of its partition's leader."""
    with cluster.admin() as api:
        created = api.post("/v1/streams", json={"name": name, "subject": f"{name}.in", **spec})
    assert created.status_code == 201, created.text
    return int(created.json()["partitions"][0]["leader"])


def _stored(forwarding: Forwarding) -> list[Any]:
    with forwarding.cluster.admin() as api:
        records: list[Any] = fetch(api, STREAM_A, max_records=10 * IN_ORDER)["records"]
    return records


async def test_an_allowed_publish_through_the_other_node_is_stored_and_acked(
    forwarding: Forwarding,
) -> None:
    credentials = forwarding.cluster.grpc_credentials(forwarding.writer_token)
    before = len(_stored(forwarding))
    request = pb.PublishRequest(
        stream=STREAM_A, key=b"k", value=b"through", correlationId="w-1", ackPolicy=pb.ALL
    )
    async with liftbridge_stub(forwarding.elsewhere, credentials) as stub:
        ack = (await stub.Publish(request, timeout=DEADLINE_S)).ack
    assert (ack.stream, ack.offset, ack.correlationId) == (STREAM_A, before, "w-1")
    assert ack.commitTimestamp > 0
    stored = _stored(forwarding)[before]
    assert (stored["key"], stored["value"]) == ("k", "through")


async def test_a_publish_without_the_right_is_refused_through_either_node(
    forwarding: Forwarding,
) -> None:
    credentials = forwarding.cluster.grpc_credentials(forwarding.reader_token)
    before = len(_stored(forwarding))
    for address in (forwarding.elsewhere, forwarding.leader):
        async with liftbridge_stub(address, credentials) as stub:
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.Publish(pb.PublishRequest(stream=STREAM_A, value=b"no"), timeout=5)
        assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert f"principal '{READER}' may not publish on 'stream:{STREAM_A}'" in (
            caught.value.details() or ""
        )
    assert len(_stored(forwarding)) == before


async def test_the_forwarded_marker_earns_no_trust_and_no_second_forward(
    forwarding: Forwarding,
) -> None:
    """The leader judges a forwarded call as any other; a node that does not lead the
    partition answers a forwarded publish FAILED_PRECONDITION (the leader moved) instead of
    forwarding it again."""
    marker = (("liftlog-forwarded", "1"),)
    reader = forwarding.cluster.grpc_credentials(forwarding.reader_token)
    writer = forwarding.cluster.grpc_credentials(forwarding.writer_token)
    request = pb.PublishRequest(stream=STREAM_A, value=b"marked")
    before = len(_stored(forwarding))
    async with liftbridge_stub(forwarding.leader, reader) as stub:
        with pytest.raises(grpc.aio.AioRpcError) as denied:
            await stub.Publish(request, timeout=5, metadata=marker)
    async with liftbridge_stub(forwarding.elsewhere, writer) as stub:
        with pytest.raises(grpc.aio.AioRpcError) as moved:
            await stub.Publish(request, timeout=5, metadata=marker)
    assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert moved.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert (moved.value.details() or "").startswith("not_leader: ")
    assert len(_stored(forwarding)) == before


async def _in_order(count: int) -> AsyncIterator[pb.PublishRequest]:
    """Every request under one repeated correlation id but the last (empty): answers must
    still find their requests."""
    for i in range(count):
        correlation = "" if i == count - 1 else "same"
        yield pb.PublishRequest(stream=STREAM_A, value=b"%d" % i, correlationId=correlation)


async def test_publish_async_through_the_other_node_keeps_the_order_sent(
    forwarding: Forwarding,
) -> None:
    credentials = forwarding.cluster.grpc_credentials(forwarding.writer_token)
    before = len(_stored(forwarding))
    answers: list[pb.PublishResponse] = []
    async with liftbridge_stub(forwarding.elsewhere, credentials) as stub:
        async for answer in stub.PublishAsync(_in_order(IN_ORDER), timeout=60):
            answers.append(answer)
    assert not [a for a in answers if a.HasField("asyncError")]
    assert len(answers) == IN_ORDER
    assert sorted(a.correlationId for a in answers) == [""] + ["same"] * (IN_ORDER - 1)
    assert sorted(a.ack.offset for a in answers) == list(range(before, before + IN_ORDER))
    values = [r["value"] for r in _stored(forwarding)[before:]]
    assert values == [str(i) for i in range(IN_ORDER)]


async def test_publish_async_through_the_other_node_answers_the_leaders_refusals(
    forwarding: Forwarding,
) -> None:
    """Only the leader knows a partition's next offset: a wrong expected offset is its
    refusal, an ``asyncError`` answering that request, and the stream goes on."""
    credentials = forwarding.cluster.grpc_credentials(forwarding.writer_token)
    answers: dict[str, pb.PublishResponse] = {}
    async with liftbridge_stub(forwarding.elsewhere_occ, credentials) as stub:
        stream = stub.PublishAsync()
        try:
            for correlation, expected in (("first", 0), ("stale", 0), ("second", 1)):
                await stream.write(
                    pb.PublishRequest(
                        stream=STREAM_OCC,
                        value=b"v",
                        expectedOffset=expected,
                        correlationId=correlation,
                    )
                )
            for _ in range(3):
                answer = await asyncio.wait_for(stream.read(), DEADLINE_S)
                assert isinstance(answer, pb.PublishResponse)
                answers[answer.correlationId] = answer
        finally:
            stream.cancel()
    assert (answers["first"].ack.offset, answers["second"].ack.offset) == (0, 1)
    assert answers["stale"].asyncError.code == pb.PublishAsyncError.INCORRECT_OFFSET


async def test_publish_to_subject_through_the_other_node_is_stored(
    forwarding: Forwarding,
) -> None:
    credentials = forwarding.cluster.grpc_credentials(forwarding.writer_token)
    before = len(_stored(forwarding))
    request = pb.PublishToSubjectRequest(subject=f"{STREAM_A}.in", value=b"subj")
    async with liftbridge_stub(forwarding.elsewhere, credentials) as stub:
        ack = (await stub.PublishToSubject(request, timeout=DEADLINE_S)).ack
    assert (ack.stream, ack.offset, ack.msgSubject) == (STREAM_A, before, f"{STREAM_A}.in")
    assert _stored(forwarding)[before]["value"] == "subj"
