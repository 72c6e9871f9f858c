"""Prometheus metrics of one node (served at ``/metrics``).

A registry per node keeps tests that run several nodes in one process from sharing counters.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, ProcessCollector, generate_latest

from ingest.histogram import LoopHistogram

_LABELS = ("stream", "partition")


class NodeMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.records_in = Counter(
            "liftlog_records_appended",
            "Records appended by partition leaders",
            _LABELS,
            registry=self.registry,
        )
        self.bytes_in = Counter(
            "liftlog_bytes_appended",
            "Batch bytes appended by partition leaders",
            _LABELS,
            registry=self.registry,
        )
        self.produce_errors = Counter(
            "liftlog_produce_errors",
            "Produce requests refused, by error code",
            (*_LABELS, "code"),
            registry=self.registry,
        )
        self.duplicates = Counter(
            "liftlog_duplicates",
            "Records dropped as Nats-Msg-Id duplicates",
            _LABELS,
            registry=self.registry,
        )
        self.slow_consumer_drops = Counter(
            "liftlog_slow_consumer_drops",
            "NATS messages dropped because a subscription fell behind (client side)",
            _LABELS,
            registry=self.registry,
        )
        self.paused_drops = Counter(
            "liftlog_paused_drops",
            "Messages without a reply subject dropped because their stream is paused",
            _LABELS,
            registry=self.registry,
        )
        self.readonly_drops = Counter(
            "liftlog_readonly_drops",
            "Messages without a reply subject dropped because their stream is read-only",
            _LABELS,
            registry=self.registry,
        )
        self.internal_reply_drops = Counter(
            "liftlog_internal_reply_drops",
            "Messages dropped unstored because their reply subject is Liftlog's or the server's",
            _LABELS,
            registry=self.registry,
        )
        self.envelope_drops = Counter(
            "liftlog_envelope_drops",
            "Corrupt Liftbridge envelopes without a reply subject, dropped unstored",
            _LABELS,
            registry=self.registry,
        )
        self.dead_lettered = Counter(
            "liftlog_dead_lettered",
            "Records of a typed stream that did not match its schema, sent to its dead letter "
            "stream",
            _LABELS,
            registry=self.registry,
        )
        self.high_watermark = Gauge(
            "liftlog_high_watermark",
            "High watermark per partition",
            _LABELS,
            registry=self.registry,
        )
        self.log_end_offset = Gauge(
            "liftlog_log_end_offset",
            "Log end offset per partition",
            _LABELS,
            registry=self.registry,
        )
        self.offline_partitions = Gauge(
            "liftlog_offline_partitions",
            "Replicas here whose log failed (a full disk's stall included, until it clears)",
            registry=self.registry,
        )
        self.storage_stalled_partitions = Gauge(
            "liftlog_storage_stalled_partitions",
            "Replicas here refusing writes because their disk is full (retrying by themselves)",
            registry=self.registry,
        )
        self.storage_retries = Counter(
            "liftlog_storage_retries",
            "Retries of a replica stalled by a full disk (each re-probes its log for space)",
            _LABELS,
            registry=self.registry,
        )
        self.fetch_waiters = Gauge(
            "liftlog_fetch_waiters",
            "Fetches long-polling for records above the high watermark",
            registry=self.registry,
        )
        self.liftbridge_subscriptions = Gauge(
            "liftlog_liftbridge_subscriptions",
            "Liftbridge Subscribe streams this node is serving",
            registry=self.registry,
        )
        self.replica_fetches_in_flight = Gauge(
            "liftlog_replica_fetches_in_flight",
            "Follower fetches this leader is answering or long-polling",
            registry=self.registry,
        )
        self.lake_offset = Gauge(
            "liftlog_lake_offset",
            "First offset not yet in the Delta lake, per partition this node leads",
            _LABELS,
            registry=self.registry,
        )
        self.lake_export_lag = Gauge(
            "liftlog_lake_export_lag_records",
            "Committed records not yet in the Delta lake (high watermark minus lake offset)",
            _LABELS,
            registry=self.registry,
        )
        self.lake_exported_records = Counter(
            "liftlog_lake_exported_records",
            "Records committed to the Delta lake by this node",
            _LABELS,
            registry=self.registry,
        )
        self.lake_commits = Counter(
            "liftlog_lake_commits",
            "Delta commits made by this node's exporters",
            _LABELS,
            registry=self.registry,
        )
        self.lake_export_errors = Counter(
            "liftlog_lake_export_errors",
            "Lake export attempts that failed (retried with backoff)",
            _LABELS,
            registry=self.registry,
        )
        self.lake_unsafe_store_refusals = Counter(
            "liftlog_lake_unsafe_store_refusals",
            "Lake exports refused because the store does not make Delta commits atomic",
            registry=self.registry,
        )
        self.retention_checks = Counter(
            "liftlog_retention_checks",
            "Times retention was applied to a partition (whether or not it deleted anything)",
            _LABELS,
            registry=self.registry,
        )
        self.nats_disconnects = Counter(
            "liftlog_nats_disconnects",
            "Times the node lost its NATS connection",
            registry=self.registry,
        )

        self._add_watch_metrics()

    def _add_watch_metrics(self) -> None:
        """What a Kafka operator looks at first: ack and fsync latency, fetch and replication
        latency, ISR health, consumer lag and the process's memory."""
        self.ack_latency = LoopHistogram(
            "liftlog_produce_ack_latency_seconds",
            "From a produce request's arrival on the leader to its ack or refusal being sent",
            ("stream", "ack_policy"),
            self.registry,
        )
        self.log_flush = LoopHistogram(
            "liftlog_log_flush_seconds",
            "One fsync of a partition log (group commit: one per write cycle or flush)",
            ("stream",),
            self.registry,
        )
        self.commit_latency = LoopHistogram(
            "liftlog_replication_commit_seconds",
            "From a leader's append to the high watermark passing it (the ISR holds it)",
            ("stream",),
            self.registry,
        )
        self.replica_fetch = LoopHistogram(
            "liftlog_replica_fetch_seconds",
            "A follower's fetch round trip to its leader, for fetches that brought records",
            ("stream",),
            self.registry,
        )
        self.consumer_fetch = LoopHistogram(
            "liftlog_consumer_fetch_seconds",
            "A REST record fetch, its long-poll wait included",
            ("stream",),
            self.registry,
        )
        self.isr_shrinks = Counter(
            "liftlog_isr_shrinks",
            "Followers this leader removed from a partition's ISR",
            _LABELS,
            registry=self.registry,
        )
        self.isr_expands = Counter(
            "liftlog_isr_expands",
            "Followers this leader added back to a partition's ISR",
            _LABELS,
            registry=self.registry,
        )
        self.under_replicated = Gauge(
            "liftlog_under_replicated_partitions",
            "Partitions this node leads whose ISR is smaller than their replica set",
            registry=self.registry,
        )
        self.under_min_isr = Gauge(
            "liftlog_under_min_isr_partitions",
            "Partitions this node leads whose ISR is smaller than min_isr (acks=all refused)",
            registry=self.registry,
        )
        self.consumer_group_lag = Gauge(
            "liftlog_consumer_group_lag_records",
            "Committed records a consumer group has not consumed yet (HW - (committed + 1)), "
            "for the groups this node coordinates, as of the last scrape",
            ("group", "stream", "partition"),
            registry=self.registry,
        )
        ProcessCollector(registry=self.registry)  # process_resident_memory_bytes and friends

    def render(self) -> bytes:
        return generate_latest(self.registry)
