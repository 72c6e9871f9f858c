"""A partition leader's NATS subscription to its subject, and the messages it had to drop.

The subscription lives exactly as long as the leadership, paused or not: a paused stream's
leader keeps listening so that it can answer every publish with ``stream_paused`` instead of
leaving the publisher with no responders. Messages arriving while the write path's queue is
full (``ingest.pending_msgs_limit`` / ``pending_bytes_limit``) are dropped and counted as a
NATS client counts a slow consumer's drops.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ingest.clock import Clock
from ingest.metrics import NodeMetrics
from ingest.produce.intake import Intake
from ingest.produce.nats_frames import InboundMessage
from spark_log.config import IngestConfig
from spark_log.stream_spec import StreamSpec

log = logging.getLogger(__name__)

DROP_LOG_INTERVAL_S = 1.0
"""At most one slow-consumer log line per partition this often."""

MessagesSink = Callable[[list[InboundMessage]], int]
"""Takes a read's messages; returns how many it had no room for."""


class PartitionSubscription:
    """Subscribes a partition's subject (in its queue group, if any) for the write path."""

    def __init__(
        self,
        spec: StreamSpec,
        partition: int,
        ingest: IngestConfig,
        metrics: NodeMetrics,
        clock: Clock,
        on_messages: MessagesSink,
    ) -> None:
        self._spec = spec
        self._partition = partition
        self._ingest = ingest
        self._drops = metrics.slow_consumer_drops.labels(spec.name, str(partition))
        self._clock = clock
        self._on_messages = on_messages
        self._intake: Intake | None = None
        self._sid: int | None = None
        self._last_drop_log_s = float("-inf")
        self.slow_consumer_drops = 0

    @property
    def active(self) -> bool:
        return self._sid is not None

    def subscribe(self, intake: Intake) -> None:
        """Start receiving the partition's subject (idempotent)."""
        if self._sid is not None:
            return
        self._intake = intake
        self._sid = intake.subscribe(
            self._spec.partition_subject(self._partition),
            self._spec.queue_group or "",
            self._deliver,
        )

    def unsubscribe(self) -> None:
        sid, self._sid = self._sid, None
        if sid is not None and self._intake is not None:
            self._intake.unsubscribe(sid)

    def _deliver(self, messages: list[InboundMessage]) -> None:
        dropped = self._on_messages(messages)
        if dropped and self.count_slow_consumer_drop(dropped):
            log.warning(
                "slow consumer: %s/%d dropped NATS messages (%d so far)",
                self._spec.name,
                self._partition,
                self.slow_consumer_drops,
            )

    def count_slow_consumer_drop(self, count: int = 1) -> bool:
        """Count dropped messages; True when it should be logged (at most once a second)."""
        self.slow_consumer_drops += count
        self._drops.inc(count)
        now = self._clock.monotonic_s()
        if now - self._last_drop_log_s >= DROP_LOG_INTERVAL_S:
            self._last_drop_log_s = now
            return True
        return False
