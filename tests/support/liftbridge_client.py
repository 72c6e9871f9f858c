"""A client of a node's Liftbridge gRPC API, generated from our own ``api.proto``.

On the secured stack it trusts the stack's CA and sends the admin token from the environment
(``stack_environment``), as ``node_client`` does for REST.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import grpc

from spark_log.client.credentials import ClientCredentials
from spark_log.liftbridge import api_pb2_grpc


def channel_credentials(credentials: ClientCredentials) -> grpc.ChannelCredentials | None:
    """TLS trusting ``ca_file`` (with the client certificate for mTLS), None: plaintext."""
    if not credentials.ca_file:
        return None
    cert = Path(credentials.cert_file).read_bytes() if credentials.cert_file else None
    key = Path(credentials.key_file).read_bytes() if credentials.key_file else None
    return grpc.ssl_channel_credentials(
        Path(credentials.ca_file).read_bytes(), private_key=key, certificate_chain=cert
    )


def token_metadata(credentials: ClientCredentials) -> tuple[tuple[str, str], ...]:
    """The ``authorization`` metadata a call carries (none without a token)."""
    if not credentials.token:
        return ()
    return (("authorization", f"Bearer {credentials.token}"),)


@asynccontextmanager
async def liftbridge_stub(
    address: str, credentials: ClientCredentials | None = None
) -> AsyncIterator[api_pb2_grpc.APIAsyncStub]:
    """An async ``APIStub`` on ``address`` (host:port); every call carries the token metadata."""
    creds = credentials if credentials is not None else ClientCredentials.resolve()
    tls = channel_credentials(creds)
    metadata = token_metadata(creds)
    interceptors = _interceptors(metadata)
    if tls is None:
        channel = grpc.aio.insecure_channel(address, interceptors=interceptors)
    else:
        channel = grpc.aio.secure_channel(address, tls, interceptors=interceptors)
    try:
        yield api_pb2_grpc.APIStub(channel)
    finally:
        await channel.close()


class _MetadataInterceptor:
    """Adds the token metadata to a call. grpc.aio files an interceptor under the first kind
    of call it intercepts only, so each kind gets an instance of its own subclass."""

    def __init__(self, metadata: tuple[tuple[str, str], ...]) -> None:
        self._metadata = metadata

    def _with_metadata(self, details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
        metadata = grpc.aio.Metadata(*(details.metadata or ()), *self._metadata)
        return grpc.aio.ClientCallDetails(
            details.method, details.timeout, metadata, details.credentials, details.wait_for_ready
        )


class _UnaryUnary(_MetadataInterceptor, grpc.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(self, continuation, details, request):  # type: ignore[no-untyped-def]
        return await continuation(self._with_metadata(details), request)


class _UnaryStream(_MetadataInterceptor, grpc.aio.UnaryStreamClientInterceptor):
    async def intercept_unary_stream(self, continuation, details, request):  # type: ignore[no-untyped-def]
        return await continuation(self._with_metadata(details), request)


class _StreamStream(_MetadataInterceptor, grpc.aio.StreamStreamClientInterceptor):
    async def intercept_stream_stream(self, continuation, details, request_iterator):  # type: ignore[no-untyped-def]
        return await continuation(self._with_metadata(details), request_iterator)


def _interceptors(metadata: tuple[tuple[str, str], ...]) -> list[grpc.aio.ClientInterceptor]:
    """Unary, server streaming and bidirectional calls all carry ``metadata``."""
    if not metadata:
        return []
    return [kind(metadata) for kind in (_UnaryUnary, _UnaryStream, _StreamStream)]
