"""Prometheus metrics of one node (served at ``/metrics``).

A registry per node keeps tests that run several nodes in one process from sharing counters.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

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

    def render(self) -> bytes:
        return generate_latest(self.registry)
