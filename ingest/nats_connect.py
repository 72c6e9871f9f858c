"""How a node connects to NATS: every server it knows, its credentials, bounded reconnects.

A node outlives NATS servers: when the one it is attached to dies, nats-py moves to the next
server of the list (and to servers the cluster announced), replays the subscriptions and
carries on. The options here make that fast and bounded: a dead peer is noticed within a few
pings instead of nats-py's default of minutes, waits between attempts are short, and
publishes made while disconnected are buffered only up to ``RECONNECT_BUFFER_BYTES``.
Attempts themselves are unlimited on purpose: a node is a long-lived server that must come
back by itself after a NATS outage of any length.
"""

from __future__ import annotations

from ingest.produce.intake import IntakeSettings
from spark_log.config import NodeConfig
from spark_log.fetch_wire import cluster_token, node_inbox_prefix
from spark_log.nats_options import NatsAuthOptions, credential_options, nats_auth_options

__all__ = ["credential_options", "intake_settings", "nats_connect_options"]

NATS_CONNECT_TIMEOUT_S = 10.0
# seconds between two attempts on the same server (the next server is tried at once)
NATS_RECONNECT_TIME_WAIT_S = 0.5
UNLIMITED_RECONNECT_ATTEMPTS = -1
# a server that stops answering (a partition, not a refused connection) is given up after
# NATS_PING_INTERVAL_S * NATS_MAX_OUTSTANDING_PINGS seconds
NATS_PING_INTERVAL_S = 5
NATS_MAX_OUTSTANDING_PINGS = 3
RECONNECT_BUFFER_BYTES = 64 * 1024 * 1024


class NatsConnectOptions(NatsAuthOptions):
    """The ``nats.connect`` keywords a node passes besides its callbacks (those of
    ``NatsAuthOptions`` only when its credentials and TLS settings call for them)."""

    servers: list[str]
    name: str
    connect_timeout: float
    dont_randomize: bool
    allow_reconnect: bool
    max_reconnect_attempts: int
    reconnect_time_wait: float
    ping_interval: int
    max_outstanding_pings: int
    pending_size: int
    inbox_prefix: str


def nats_connect_options(config: NodeConfig) -> NatsConnectOptions:
    """Keyword arguments for ``nats.connect`` (callbacks excluded) built from the config.

    The servers are tried in the configured order (``dont_randomize``): a node lists its own
    (nearest) server first. Replies to the node's requests (fetch and epoch responses, which
    carry every stream's records) arrive under Liftlog's internal namespace, where only node
    users may subscribe, rather than on the ``_INBOX.`` prefix publishers read their acks on.
    """
    return {
        "servers": list(config.nats_server_urls),
        "name": f"liftlog-node-{config.broker_id}",
        "connect_timeout": NATS_CONNECT_TIMEOUT_S,
        "dont_randomize": True,
        "allow_reconnect": True,
        "max_reconnect_attempts": UNLIMITED_RECONNECT_ATTEMPTS,
        "reconnect_time_wait": NATS_RECONNECT_TIME_WAIT_S,
        "ping_interval": NATS_PING_INTERVAL_S,
        "max_outstanding_pings": NATS_MAX_OUTSTANDING_PINGS,
        "pending_size": RECONNECT_BUFFER_BYTES,
        "inbox_prefix": node_inbox_prefix(cluster_token(config.zk_root)),
        **nats_auth_options(config.nats),
    }


def intake_settings(config: NodeConfig) -> IntakeSettings:
    """The intake connection's settings: the same servers, credentials and liveness rules as
    the node's other connection (``nats_connect_options``)."""
    return IntakeSettings(
        servers=tuple(config.nats_server_urls),
        name=f"liftlog-node-{config.broker_id}-intake",
        credentials=config.nats,
        connect_timeout_s=NATS_CONNECT_TIMEOUT_S,
        reconnect_wait_s=NATS_RECONNECT_TIME_WAIT_S,
        ping_interval_s=NATS_PING_INTERVAL_S,
        max_outstanding_pings=NATS_MAX_OUTSTANDING_PINGS,
        held_bytes=RECONNECT_BUFFER_BYTES,
    )
