"""The TLS front of the gRPC API: client certificates verified when presented and optional
(as REST with a CA), or required; plaintext and strangers' certificates refused; the
principal of each connection's certificate found by its gRPC peer; large answers relayed
whole; nothing left behind when it stops."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
import uvloop

from ingest.liftbridge.tls_front import TlsFront, certificate_principal
from liftlog.embedded.certs import CertificateAuthority, CertPaths
from liftlog.embedded.ports import free_port
from spark_log.liftbridge import api_pb2 as pb
from spark_log.liftbridge import api_pb2_grpc
from spark_log.tls_config import ApiTlsConfig

ANONYMOUS = "-"
BIG_MESSAGES = 64
BIG_VALUE = b"x" * (256 * 1024)


class _WhoAmI(api_pb2_grpc.APIServicer):
    """FetchMetadata answers the certificate principal of the call as a broker's host;
    Subscribe streams large messages."""

    async def FetchMetadata(  # noqa: N802 (the RPC's name)
        self, request: pb.FetchMetadataRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> pb.FetchMetadataResponse:
        principal = certificate_principal(context.peer()) or ANONYMOUS
        return pb.FetchMetadataResponse(brokers=[pb.Broker(host=principal)])

    async def Subscribe(  # noqa: N802
        self, request: pb.SubscribeRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> AsyncIterator[pb.Message]:
        for offset in range(BIG_MESSAGES):
            yield pb.Message(offset=offset, value=BIG_VALUE)


@dataclass
class _Pki:
    ca_file: str
    server: CertPaths
    alice: CertPaths
    stranger: CertPaths


@pytest.fixture
def pki(tmp_path: Path) -> _Pki:
    ca = CertificateAuthority.create()
    ca_paths = ca.write(tmp_path / "ca.pem", tmp_path / "ca.key")
    other = CertificateAuthority.create("another CA")
    return _Pki(
        ca_paths.cert_file,
        ca.issue_to(tmp_path, "server", "node", server=True, client=True),
        ca.issue_to(tmp_path, "alice", "alice", server=False, client=True),
        other.issue_to(tmp_path, "mallory", "alice", server=False, client=True),
    )


@dataclass
class _Served:
    address: str
    front: TlsFront


async def _serve(pki: _Pki, require: bool) -> tuple[grpc.aio.Server, _Served]:
    tls = ApiTlsConfig(pki.server.cert_file, pki.server.key_file, pki.ca_file, require)
    front = TlsFront(tls)
    server = grpc.aio.server()
    api_pb2_grpc.add_APIServicer_to_server(_WhoAmI(), server)  # type: ignore[abstract]
    server.add_insecure_port(front.backend_address)
    await server.start()
    port = free_port()
    await front.start("127.0.0.1", port)
    return server, _Served(f"127.0.0.1:{port}", front)


@pytest.fixture
async def optional(pki: _Pki) -> AsyncIterator[_Served]:
    server, served = await _serve(pki, require=False)
    yield served
    await server.stop(0)
    await served.front.stop()


@pytest.fixture
async def required(pki: _Pki) -> AsyncIterator[_Served]:
    server, served = await _serve(pki, require=True)
    yield served
    await server.stop(0)
    await served.front.stop()


def _tls(pki: _Pki, cert: CertPaths | None = None) -> grpc.ChannelCredentials:
    root = Path(pki.ca_file).read_bytes()
    if cert is None:
        return grpc.ssl_channel_credentials(root)
    key, chain = Path(cert.key_file).read_bytes(), Path(cert.cert_file).read_bytes()
    return grpc.ssl_channel_credentials(root, private_key=key, certificate_chain=chain)


async def _principal(address: str, credentials: grpc.ChannelCredentials | None) -> str:
    if credentials is None:
        channel = grpc.aio.insecure_channel(address)
    else:
        channel = grpc.aio.secure_channel(address, credentials)
    async with channel:
        answer = await api_pb2_grpc.APIStub(channel).FetchMetadata(
            pb.FetchMetadataRequest(), timeout=10
        )
    return answer.brokers[0].host


async def _refused(address: str, credentials: grpc.ChannelCredentials | None) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await _principal(address, credentials)
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_a_certificate_is_optional_and_names_its_principal(
    pki: _Pki, optional: _Served
) -> None:
    assert await _principal(optional.address, _tls(pki)) == ANONYMOUS
    assert await _principal(optional.address, _tls(pki, pki.alice)) == "alice"


async def test_plaintext_and_strangers_certificates_are_refused(
    pki: _Pki, optional: _Served
) -> None:
    await _refused(optional.address, None)
    await _refused(optional.address, _tls(pki, pki.stranger))


async def test_require_client_cert_refuses_a_connection_without_one(
    pki: _Pki, required: _Served
) -> None:
    await _refused(required.address, _tls(pki))
    assert await _principal(required.address, _tls(pki, pki.alice)) == "alice"


async def test_large_answers_are_relayed_whole(pki: _Pki, optional: _Served) -> None:
    async with grpc.aio.secure_channel(optional.address, _tls(pki)) as channel:
        stream = api_pb2_grpc.APIStub(channel).Subscribe(pb.SubscribeRequest(stream="s"))
        offsets = [message.offset async for message in stream if message.value == BIG_VALUE]
    assert offsets == list(range(BIG_MESSAGES))


async def test_stopping_closes_connections_and_removes_the_sockets(pki: _Pki) -> None:
    server, served = await _serve(pki, require=False)
    channel = grpc.aio.secure_channel(served.address, _tls(pki, pki.alice))
    try:
        await api_pb2_grpc.APIStub(channel).FetchMetadata(pb.FetchMetadataRequest(), timeout=10)
        backend = Path(served.front.backend_address.removeprefix("unix:"))
        assert backend.exists()
        await server.stop(0)
        await served.front.stop()
        assert not backend.parent.exists()
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await api_pb2_grpc.APIStub(channel).FetchMetadata(pb.FetchMetadataRequest(), timeout=5)
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        await channel.close()


def test_the_front_serves_on_the_nodes_loop(pki: _Pki) -> None:
    """The node runs on uvloop, whose transports are not asyncio's classes."""

    async def scenario() -> list[str]:
        server, served = await _serve(pki, require=False)
        try:
            return [
                await _principal(served.address, _tls(pki)),
                await _principal(served.address, _tls(pki, pki.alice)),
            ]
        finally:
            await server.stop(0)
            await served.front.stop()

    assert uvloop.run(scenario()) == [ANONYMOUS, "alice"]
