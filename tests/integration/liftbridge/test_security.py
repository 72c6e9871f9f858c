"""The Liftbridge gRPC API on the secured stack (``liftlog standalone --secure``) is secured
as REST is: TLS with the nodes' certificates, a bearer token in the ``authorization``
metadata or a client certificate of the stack's CA, the same ACL action per RPC as its REST
route, and UNAUTHENTICATED / PERMISSION_DENIED naming who may not do what.

Whether an RPC is served at all is not this module's business: a call the ACL lets through
may still fail (an unknown stream, a bad request); only its authorization outcome is
asserted (PERMISSION_DENIED or UNAUTHENTICATED, or neither).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import pytest

from liftlog.embedded.certs import CertificateAuthority
from spark_log.client.credentials import ClientCredentials
from spark_log.liftbridge import api_pb2 as pb
from spark_log.liftbridge import api_pb2_grpc
from tests.support.auth_stack import AuthCluster, start_secure_cluster
from tests.support.docs.blocks import REPO, parse
from tests.support.liftbridge_client import liftbridge_stub
from tests.support.waiting import wait_for_async

STREAM_A = "lb-sec-a"
STREAM_B = "lb-sec-b"
READER = "lb-reader"
WRITER = "lb-writer"
CERT_READER = "lb-cert-reader"
FIRST_MESSAGE_TIMEOUT_S = 10.0
REVOCATION_TIMEOUT_S = 10.0
OK = grpc.StatusCode.OK
DENIED = grpc.StatusCode.PERMISSION_DENIED
UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED

if TYPE_CHECKING:  # the async stub's type exists in the generated .pyi only
    Rpc = Callable[[api_pb2_grpc.APIAsyncStub], Awaitable[object]]


DOC = REPO / "docs" / "liftbridge.md"


@dataclass(frozen=True)
class Secured:
    cluster: AuthCluster
    reader_token: str
    writer_token: str


@pytest.fixture(scope="module")
def secured() -> Iterator[Secured]:
    """Two secured nodes; stream A and B; ``READER`` (a token) and ``CERT_READER`` (a
    client certificate) may consume A and nothing else, ``WRITER`` publish on A only."""
    for cluster in start_secure_cluster(nodes=2):
        with cluster.admin() as api:
            for name in (STREAM_A, STREAM_B):
                created = api.post("/v1/streams", json={"name": name, "subject": f"{name}.in"})
                assert created.status_code == 201, created.text
        _, reader = cluster.new_token(READER)
        _, writer = cluster.new_token(WRITER)
        for principal in (READER, CERT_READER):
            cluster.allow(principal, "consume", f"stream:{STREAM_A}")
        cluster.allow(WRITER, "publish", f"stream:{STREAM_A}")
        yield Secured(cluster, reader, writer)


async def _outcome(address: str, credentials: ClientCredentials, rpc: Rpc) -> grpc.StatusCode:
    """OK, or the status the call ended with."""
    async with liftbridge_stub(address, credentials) as stub:
        try:
            await rpc(stub)
        except grpc.aio.AioRpcError as exc:
            return exc.code()
    return OK


async def _details(address: str, credentials: ClientCredentials, rpc: Rpc) -> str:
    async with liftbridge_stub(address, credentials) as stub:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await rpc(stub)
    return f"{caught.value.code().name}: {caught.value.details()}"


def _subscribe(stream: str) -> Rpc:
    """Subscribe and read the first message (the handshake) only."""

    async def call(stub: api_pb2_grpc.APIAsyncStub) -> object:
        responses = stub.Subscribe(pb.SubscribeRequest(stream=stream))
        try:
            return await asyncio.wait_for(responses.read(), FIRST_MESSAGE_TIMEOUT_S)
        finally:
            responses.cancel()

    return call


def _publish_async(stream: str) -> Rpc:
    async def call(stub: api_pb2_grpc.APIAsyncStub) -> object:
        responses = stub.PublishAsync()
        try:
            # the node may end the call before the request is written: read() says why
            with contextlib.suppress(grpc.aio.AioRpcError):
                await responses.write(
                    pb.PublishRequest(stream=stream, value=b"v", correlationId="1")
                )
            return await asyncio.wait_for(responses.read(), FIRST_MESSAGE_TIMEOUT_S)
        finally:
            responses.cancel()

    return call


def _fetch_metadata(stub: api_pb2_grpc.APIAsyncStub) -> Awaitable[object]:
    return stub.FetchMetadata(pb.FetchMetadataRequest())


def _refused(action: str, stream: str) -> str:
    return f"may not {action} on 'stream:{stream}'"


# (label, the call, what refuses it to a principal that may consume A only; None: allowed)
ACL_MATRIX: list[tuple[str, Rpc, str | None]] = [
    ("Subscribe A", _subscribe(STREAM_A), None),
    ("Subscribe B", _subscribe(STREAM_B), _refused("consume", STREAM_B)),
    (
        "Publish A",
        lambda s: s.Publish(pb.PublishRequest(stream=STREAM_A, value=b"v")),
        _refused("publish", STREAM_A),
    ),
    (
        "CreateStream",
        lambda s: s.CreateStream(pb.CreateStreamRequest(name="c", subject="c")),
        _refused("create", "c"),
    ),
    (
        "DeleteStream A",
        lambda s: s.DeleteStream(pb.DeleteStreamRequest(name=STREAM_A)),
        _refused("delete", STREAM_A),
    ),
    (
        "PauseStream A",
        lambda s: s.PauseStream(pb.PauseStreamRequest(name=STREAM_A)),
        _refused("pause", STREAM_A),
    ),
    (
        "SetStreamReadonly A",
        lambda s: s.SetStreamReadonly(pb.SetStreamReadonlyRequest(name=STREAM_A, readonly=True)),
        _refused("alter", STREAM_A),
    ),
    ("FetchMetadata", _fetch_metadata, None),
    (
        "PublishToSubject A",
        lambda s: s.PublishToSubject(pb.PublishToSubjectRequest(subject=f"{STREAM_A}.in")),
        _refused("publish", STREAM_A),
    ),
    (
        "PublishToSubject unrecorded",
        lambda s: s.PublishToSubject(pb.PublishToSubjectRequest(subject="lb-sec-nowhere")),
        "may not publish on 'lb-sec-nowhere'",
    ),
    (
        "FetchPartitionMetadata A",
        lambda s: s.FetchPartitionMetadata(pb.FetchPartitionMetadataRequest(stream=STREAM_A)),
        None,
    ),
    (
        "FetchPartitionMetadata B",
        lambda s: s.FetchPartitionMetadata(pb.FetchPartitionMetadataRequest(stream=STREAM_B)),
        _refused("describe", STREAM_B),
    ),
    (
        "SetCursor A",
        lambda s: s.SetCursor(pb.SetCursorRequest(stream=STREAM_A, cursorId="c", offset=1)),
        None,
    ),
    (
        "SetCursor B",
        lambda s: s.SetCursor(pb.SetCursorRequest(stream=STREAM_B, cursorId="c", offset=1)),
        _refused("consume", STREAM_B),
    ),
    (
        "FetchCursor A",
        lambda s: s.FetchCursor(pb.FetchCursorRequest(stream=STREAM_A, cursorId="c")),
        None,
    ),
    (
        "FetchCursor B",
        lambda s: s.FetchCursor(pb.FetchCursorRequest(stream=STREAM_B, cursorId="c")),
        _refused("describe", STREAM_B),
    ),
    (
        "JoinConsumerGroup A",
        lambda s: s.JoinConsumerGroup(
            pb.JoinConsumerGroupRequest(groupId="g", consumerId="m", streams=[STREAM_A])
        ),
        None,
    ),
    (
        "JoinConsumerGroup A+B",
        lambda s: s.JoinConsumerGroup(
            pb.JoinConsumerGroupRequest(groupId="g", consumerId="m", streams=[STREAM_A, STREAM_B])
        ),
        _refused("consume", STREAM_B),
    ),
]


@pytest.mark.parametrize(("label", "rpc", "refusal"), ACL_MATRIX, ids=[m[0] for m in ACL_MATRIX])
async def test_each_rpc_needs_the_action_of_its_rest_route(
    secured: Secured, label: str, rpc: Rpc, refusal: str | None
) -> None:
    cluster = secured.cluster
    credentials = cluster.grpc_credentials(secured.reader_token)
    address = cluster.grpc_addresses[0]
    if refusal is None:
        assert await _outcome(address, credentials, rpc) not in (DENIED, UNAUTHENTICATED)
    else:
        details = await _details(address, credentials, rpc)
        assert details.startswith(f"PERMISSION_DENIED: forbidden: principal '{READER}' ")
        assert refusal in details


def _leader_address(cluster: AuthCluster, stream: str) -> str:
    """The gRPC address of the node leading ``stream``'s partition 0 (broker ids count
    from 1 in the stack's node order)."""
    with cluster.admin() as api:
        described = api.get(f"/v1/streams/{stream}")
    assert described.status_code == 200, described.text
    leader = int(described.json()["partitions"][0]["leader"])
    return cluster.grpc_addresses[leader - 1]


async def test_publish_async_judges_each_request_and_goes_on(secured: Secured) -> None:
    """A refused request is an asyncError on the stream, and the next request is served
    (sent to the leader: the publish itself is not this module's business)."""
    cluster = secured.cluster
    credentials = cluster.grpc_credentials(secured.writer_token)
    async with liftbridge_stub(_leader_address(cluster, STREAM_A), credentials) as stub:
        stream = stub.PublishAsync()
        try:
            for correlation, name in (("b", STREAM_B), ("a", STREAM_A)):
                await stream.write(
                    pb.PublishRequest(stream=name, value=b"v", correlationId=correlation)
                )
            answers = {}
            for _ in range(2):
                answer = await asyncio.wait_for(stream.read(), FIRST_MESSAGE_TIMEOUT_S)
                assert isinstance(answer, pb.PublishResponse)
                answers[answer.correlationId] = answer
        finally:
            stream.cancel()
    refused = answers["b"].asyncError
    assert refused.code == pb.PublishAsyncError.PERMISSION_DENIED
    assert f"principal '{WRITER}' {_refused('publish', STREAM_B)}" in refused.message
    assert not answers["a"].HasField("asyncError")
    assert answers["a"].ack.stream == STREAM_A


@pytest.mark.parametrize(
    "rpc",
    [
        lambda s: s.LeaveConsumerGroup(pb.LeaveConsumerGroupRequest(groupId="g", consumerId="m")),
        lambda s: s.FetchConsumerGroupAssignments(
            pb.FetchConsumerGroupAssignmentsRequest(groupId="g", consumerId="m")
        ),
        lambda s: s.ReportConsumerGroupCoordinator(
            pb.ReportConsumerGroupCoordinatorRequest(groupId="g", consumerId="m")
        ),
    ],
    ids=["LeaveConsumerGroup", "FetchConsumerGroupAssignments", "ReportConsumerGroupCoordinator"],
)
async def test_group_member_rpcs_need_a_credential_and_are_judged_by_their_handler(
    secured: Secured, rpc: Rpc
) -> None:
    cluster = secured.cluster
    address = cluster.grpc_addresses[0]
    reader = cluster.grpc_credentials(secured.reader_token)
    assert await _outcome(address, cluster.grpc_credentials(), rpc) == UNAUTHENTICATED
    assert await _outcome(address, reader, rpc) != UNAUTHENTICATED


async def test_a_refusal_names_principal_action_and_resource(secured: Secured) -> None:
    cluster = secured.cluster
    credentials = cluster.grpc_credentials(secured.reader_token)
    details = await _details(cluster.grpc_addresses[1], credentials, _subscribe(STREAM_B))
    assert details == (
        f"PERMISSION_DENIED: forbidden: principal '{READER}' may not consume on "
        f"'stream:{STREAM_B}' (no ACL allows it, or one denies it)"
    )


@pytest.mark.parametrize(
    "rpc",
    [_fetch_metadata, _subscribe(STREAM_A), _publish_async(STREAM_A)],
    ids=["unary", "server streaming", "bidirectional"],
)
async def test_without_credentials_every_kind_of_rpc_is_unauthenticated(
    secured: Secured, rpc: Rpc
) -> None:
    cluster = secured.cluster
    details = await _details(cluster.grpc_addresses[0], cluster.grpc_credentials(), rpc)
    assert details.startswith("UNAUTHENTICATED: unauthenticated: authentication required")


async def test_a_bad_or_malformed_token_is_unauthenticated(secured: Secured) -> None:
    cluster = secured.cluster
    address = cluster.grpc_addresses[0]
    bad = await _details(address, cluster.grpc_credentials("llt_0123_nope"), _fetch_metadata)
    assert (
        bad == "UNAUTHENTICATED: unauthenticated: the bearer token is invalid, unknown or revoked"
    )

    async def basic(stub: api_pb2_grpc.APIAsyncStub) -> object:
        metadata = (("authorization", f"Basic {cluster.admin_token}"),)
        return await stub.FetchMetadata(pb.FetchMetadataRequest(), metadata=metadata)

    malformed = await _details(address, cluster.grpc_credentials(), basic)
    assert "must be 'Bearer <token>'" in malformed


async def test_a_revoked_token_is_refused_on_every_node(secured: Secured) -> None:
    cluster = secured.cluster
    token_id, token = cluster.new_token("lb-revoked")
    credentials = cluster.grpc_credentials(token)
    for address in cluster.grpc_addresses:
        assert await _outcome(address, credentials, _fetch_metadata) != UNAUTHENTICATED
    cluster.revoke(token_id)
    for address in cluster.grpc_addresses:
        refused = _refuses(address, credentials)
        await wait_for_async(refused, REVOCATION_TIMEOUT_S, message=f"{address} to refuse")


def _refuses(address: str, credentials: ClientCredentials) -> Callable[[], Awaitable[bool]]:
    async def refused() -> bool:
        return await _outcome(address, credentials, _fetch_metadata) == UNAUTHENTICATED

    return refused


async def test_plaintext_is_refused(secured: Secured) -> None:
    address = secured.cluster.grpc_addresses[0]
    plaintext = ClientCredentials(token=secured.cluster.admin_token)
    assert await _outcome(address, plaintext, _fetch_metadata) == grpc.StatusCode.UNAVAILABLE


async def test_a_client_certificate_of_the_stacks_ca_is_its_cn(secured: Secured) -> None:
    cluster = secured.cluster
    credentials = cluster.grpc_credentials(cert=cluster.client_cert(CERT_READER))
    address = cluster.grpc_addresses[0]
    assert await _outcome(address, credentials, _subscribe(STREAM_A)) not in (
        DENIED,
        UNAUTHENTICATED,
    )
    details = await _details(address, credentials, _subscribe(STREAM_B))
    assert f"principal '{CERT_READER}' may not consume on 'stream:{STREAM_B}'" in details


async def test_a_token_beside_a_certificate_is_what_judges(secured: Secured) -> None:
    """As over REST: a call that sent a token is judged by it alone."""
    cluster = secured.cluster
    cert = cluster.client_cert(CERT_READER)
    credentials = cluster.grpc_credentials("llt_0123_nope", cert)
    outcome = await _outcome(cluster.grpc_addresses[0], credentials, _fetch_metadata)
    assert outcome == UNAUTHENTICATED


async def test_a_certificate_of_another_ca_is_refused(secured: Secured, tmp_path: Path) -> None:
    cluster = secured.cluster
    stranger = CertificateAuthority.create("another CA").issue_to(
        tmp_path, "stranger", "admin", server=False, client=True
    )
    credentials = cluster.grpc_credentials(cert=stranger)
    outcome = await _outcome(cluster.grpc_addresses[0], credentials, _fetch_metadata)
    assert outcome == grpc.StatusCode.UNAVAILABLE


async def test_a_cursor_call_forwarded_to_its_leader_passes_as_the_caller(
    secured: Secured,
) -> None:
    """One of the two nodes does not lead the cursor's ``__cursors`` partition and forwards
    the call over REST with the caller's token: both answer what either stored."""
    cluster = secured.cluster
    credentials = cluster.grpc_credentials(secured.reader_token)
    for offset, address in enumerate(cluster.grpc_addresses, start=10):
        async with liftbridge_stub(address, credentials) as stub:
            await stub.SetCursor(
                pb.SetCursorRequest(stream=STREAM_A, cursorId="fwd", offset=offset)
            )
        for reader in cluster.grpc_addresses:
            async with liftbridge_stub(reader, credentials) as stub:
                got = await stub.FetchCursor(pb.FetchCursorRequest(stream=STREAM_A, cursorId="fwd"))
            assert got.offset == offset, reader


def test_the_documented_tls_client_reaches_the_secured_stack(
    secured: Secured, tmp_path: Path
) -> None:
    """docs/liftbridge.md's grpc example, run as written from a directory holding the stack's
    data directory as ``liftlog-data`` (only the address is the stack's own)."""
    block = next(b for b in parse(DOC).blocks if b.lang == "python" and "secure_channel" in b.text)
    (tmp_path / "liftlog-data").symlink_to(secured.cluster.cert_dir)
    script = tmp_path / "example.py"
    script.write_text(block.text.replace("127.0.0.1:9292", secured.cluster.grpc_addresses[0]))
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "brokers" in done.stdout and STREAM_A in done.stdout, done.stdout
