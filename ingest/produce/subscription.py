"""A partition leader's NATS subscription to its subject, and the drops NATS reports on it.

The subscription lives exactly as long as the leadership, paused or not: a paused stream's
leader keeps listening so that it can answer every publish with ``stream_paused`` instead of
leaving the publisher with no responders.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

import nats.errors
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from ingest.clock import Clock
from ingest.metrics import NodeMetrics
from spark_log.config import IngestConfig
from spark_log.stream_spec import StreamSpec

DROP_LOG_INTERVAL_S = 1.0
"""At most one slow-consumer log line per partition this often."""


class PartitionSubscription:
    """Subscribes a partition's subject (in its queue group, if any) for the write path."""

    def __init__(
        self,
        spec: StreamSpec,
        partition: int,
        ingest: IngestConfig,
        metrics: NodeMetrics,
        clock: Clock,
        on_message: Callable[[Msg], Awaitable[None]],
    ) -> None:
        self._spec = spec
        self._partition = partition
        self._ingest = ingest
        self._drops = metrics.slow_consumer_drops.labels(spec.name, str(partition))
        self._clock = clock
        self._on_message = on_message
        self._subscription: Subscription | None = None
        self._last_drop_log_s = float("-inf")
        self.slow_consumer_drops = 0

    @property
    def active(self) -> bool:
        return self._subscription is not None

    async def subscribe(self, nc: NatsClient) -> None:
        """Start receiving the partition's subject (idempotent)."""
        if self._subscription is not None:
            return
        self._subscription = await nc.subscribe(
            self._spec.partition_subject(self._partition),
            queue=self._spec.queue_group or "",
            cb=self._on_message,
            pending_msgs_limit=self._ingest.pending_msgs_limit,
            pending_bytes_limit=self._ingest.pending_bytes_limit,
        )

    async def unsubscribe(self) -> None:
        sub, self._subscription = self._subscription, None
        if sub is not None:
            with contextlib.suppress(nats.errors.Error):  # the connection may be gone already
                await sub.unsubscribe()

    def owns(self, subscription: object) -> bool:
        return subscription is not None and subscription is self._subscription

    def count_slow_consumer_drop(self) -> bool:
        """Count a NATS drop; True when it should be logged (at most once a second)."""
        self.slow_consumer_drops += 1
        self._drops.inc()
        now = self._clock.monotonic_s()
        if now - self._last_drop_log_s >= DROP_LOG_INTERVAL_S:
            self._last_drop_log_s = now
            return True
        return False
