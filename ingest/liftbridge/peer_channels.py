"""This node's gRPC channels to the other nodes' Liftbridge APIs, for the publishes it forwards.

With authentication on, a node may not publish on the streams' NATS subjects, so a publish
for a partition another node leads goes to that leader's own Liftbridge API: one channel per
leader broker, opened on first use to the address the broker registered in ZooKeeper and kept
until the server stops. Over TLS when the node serves TLS, trusting ``api_tls.ca_file`` and
presenting the node's certificate; each call carries the caller's token (the node's own for a
certificate caller) and the ``liftlog-forwarded`` marker, so the leader judges the caller and
never forwards the call again.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

import grpc

from ingest.admin.node_view import NodeView
from ingest.security.node_credentials import outgoing_credentials
from spark_log.errors import UnavailableError
from spark_log.liftbridge import api_pb2_grpc

if TYPE_CHECKING:  # the async stub's type exists in the generated .pyi only
    from spark_log.liftbridge.api_pb2_grpc import APIAsyncStub

log = logging.getLogger("liftlog.liftbridge")

FORWARDED = "liftlog-forwarded"
"""The metadata key that marks a call one node forwarded to another."""
Metadata = tuple[tuple[str, str], ...]
CLOSE_GRACE_S = 2.0
"""How long the calls still on a channel being closed get to end."""
MESSAGE_SLACK_BYTES = 64 * 1024
"""Room for a request's other fields beside a record of the largest size a node accepts."""


class PeerChannels:
    """One node's channels, by broker id."""

    def __init__(self, node: NodeView) -> None:
        self._node = node
        self._channels: dict[int, grpc.aio.Channel] = {}
        self._opening = asyncio.Lock()
        self._closing: set[asyncio.Task[None]] = set()

    async def stub(self, broker_id: int) -> APIAsyncStub:
        """A stub of ``broker_id``'s Liftbridge API (its channel opened on first use)."""
        return api_pb2_grpc.APIStub(await self.channel(broker_id))

    async def channel(self, broker_id: int) -> grpc.aio.Channel:
        channel = self._channels.get(broker_id)
        if channel is not None:
            return channel
        async with self._opening:
            channel = self._channels.get(broker_id)
            if channel is None:
                channel = await self._open(broker_id)
                self._channels[broker_id] = channel
        return channel

    def forget(self, broker_id: int) -> None:
        """Drop ``broker_id``'s channel after it could not reach the broker: the next call
        looks the broker's address up again (it may have come back elsewhere)."""
        channel = self._channels.pop(broker_id, None)
        if channel is not None:
            self._close_later(channel)

    async def close(self) -> None:
        channels, self._channels = list(self._channels.values()), {}
        await asyncio.gather(*(c.close(CLOSE_GRACE_S) for c in channels))
        if self._closing:
            await asyncio.wait(set(self._closing))

    async def _open(self, broker_id: int) -> grpc.aio.Channel:
        address = await self._address(broker_id)
        config = self._node.config
        limit = config.limits.max_request_bytes + MESSAGE_SLACK_BYTES
        options = [
            ("grpc.max_receive_message_length", limit),
            ("grpc.max_send_message_length", limit),
        ]
        tls = config.api_tls
        if not tls.enabled:
            return grpc.aio.insecure_channel(address, options=options)
        credentials = await asyncio.to_thread(
            _channel_credentials, tls.ca_file, tls.cert_file, tls.key_file
        )
        log.debug("forwarding publishes to broker %s at %s", broker_id, address)
        return grpc.aio.secure_channel(address, credentials, options=options)

    async def _address(self, broker_id: int) -> str:
        for broker in await self._node.live_brokers():
            if broker.broker_id != broker_id:
                continue
            if not broker.liftbridge_address:
                raise UnavailableError(f"broker {broker_id} serves no Liftbridge API")
            return broker.liftbridge_address
        raise UnavailableError(f"broker {broker_id} is not live: retry once it is back")

    def _close_later(self, channel: grpc.aio.Channel) -> None:
        task = asyncio.ensure_future(channel.close(CLOSE_GRACE_S))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)


@functools.lru_cache(maxsize=4)
def _channel_credentials(ca_file: str, cert_file: str, key_file: str) -> grpc.ChannelCredentials:
    """TLS trusting ``ca_file`` (the system's roots without one), with the node's certificate
    as client certificate; read once per process."""
    return grpc.ssl_channel_credentials(
        Path(ca_file).read_bytes() if ca_file else None,
        private_key=Path(key_file).read_bytes(),
        certificate_chain=Path(cert_file).read_bytes(),
    )


def forward_metadata(node: NodeView) -> Metadata:
    """The metadata of a forwarded call: the marker, and the caller's bearer token (the
    node's own when the caller sent none) when there is one to send."""
    token = outgoing_credentials(node.config).token
    marker = ((FORWARDED, "1"),)
    return (("authorization", f"Bearer {token}"), *marker) if token else marker


def is_forwarded(context: grpc.aio.ServicerContext[object, object]) -> bool:
    """Whether another node forwarded this call (it must not be forwarded again)."""
    return any(key == FORWARDED for key, _value in context.invocation_metadata() or ())


_by_node: weakref.WeakKeyDictionary[NodeView, PeerChannels] = weakref.WeakKeyDictionary()


def peer_channels(node: NodeView) -> PeerChannels:
    """``node``'s channels (made on first use)."""
    channels = _by_node.get(node)
    if channels is None:
        channels = _by_node[node] = PeerChannels(node)
    return channels


async def close_peer_channels(node: NodeView) -> None:
    """Close every channel ``node`` opened (the Liftbridge server is stopping)."""
    channels = _by_node.pop(node, None)
    if channels is not None:
        await channels.close()
