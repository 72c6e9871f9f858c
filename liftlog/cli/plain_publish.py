"""``liftlog publish --plain``: exactly what any NATS client sends, for the "any NATS client"
step of the docs without the ``nats`` CLI: the value as the payload on the stream's partition
subject, no Liftlog headers, as a request so the node's ack comes back and is printed."""

from __future__ import annotations

import argparse

import nats
import nats.errors
from nats.aio.client import Client as NatsClient

from liftlog.cli.common import ack_line, rest
from spark_log.api_models import Ack, ClusterInfo, StreamDescription
from spark_log.client.client import ack_from_wire, nats_url_from_cluster, no_responders_error
from spark_log.client.nats_connect import connect_nats
from spark_log.client.nats_login import nats_login
from spark_log.errors import InvalidRequestError, RequestTimeoutError
from spark_log.nats_options import NatsAuthOptions, nats_auth_options
from spark_log.wire import decode_ack

PLAIN_ACK_TIMEOUT_S = 10.0
PLAIN_CONNECT_TIMEOUT_S = 5.0


async def publish_plain(args: argparse.Namespace, values: list[str]) -> int:
    """Send each value as a NATS request and print the ack (or raise the error ack)."""
    client = rest(args)
    spec = StreamDescription.from_json(client.get_json(f"/v1/streams/{args.stream}")).spec
    partition = 0 if args.partition is None else args.partition
    if not 0 <= partition < spec.partitions:
        raise InvalidRequestError(f"stream {spec.name} has no partition {partition}")
    subject = spec.partition_subject(partition)
    url = args.nats_url or nats_url_from_cluster(
        ClusterInfo.from_json(client.get_json("/v1/cluster"))
    )
    nc = await _connect(url, nats_auth_options(nats_login(None, client.credentials)))
    try:
        for value in values:
            reply = await _request(nc, subject, value.encode(), (spec.name, partition, url))
            print(ack_line(_ack(reply, spec.name)), flush=True)
    finally:
        await nc.close()
    return 0


async def _connect(url: str, login: NatsAuthOptions) -> NatsClient:
    """One try, bounded: a refused login or TLS handshake is NatsLoginError or
    NatsConnectError saying what to set (``spark_log.client.nats_connect``)."""
    return await connect_nats(
        url,
        login,  # LIFTLOG_NATS_*, else the Liftlog token
        timeout_s=PLAIN_CONNECT_TIMEOUT_S,
        max_reconnect_attempts=0,
        allow_reconnect=False,
    )


async def _request(
    nc: NatsClient, subject: str, payload: bytes, where: tuple[str, int, str]
) -> bytes:
    """The reply to one request; ``where`` (stream, partition, NATS URL) names what a
    no-responders refusal is about, in the client's words."""
    try:
        msg = await nc.request(subject, payload, timeout=PLAIN_ACK_TIMEOUT_S)
    except nats.errors.NoRespondersError:
        stream, partition, url = where
        raise no_responders_error(stream, partition, subject, url) from None
    except nats.errors.TimeoutError:
        raise RequestTimeoutError(f"no ack on {subject!r} within {PLAIN_ACK_TIMEOUT_S}s") from None
    return bytes(msg.data)


def _ack(data: bytes, stream: str) -> Ack:
    """The node's ack (the stream defaults to the one asked for), its error ack raised typed,
    or InvalidRequestError for a reply that is no ack at all."""
    body = decode_ack(data)
    try:
        return ack_from_wire(stream, body)
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidRequestError(f"malformed ack {data[:200]!r}") from exc
