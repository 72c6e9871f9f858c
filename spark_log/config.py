"""Typed, frozen configuration of a node and of its partition logs.

Every default is a named constant so docs, CLI help and tests name the same number. Node
configs are TOML files (``liftlog node --config FILE``); unknown keys are an error.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from spark_log.auth_config import AuthConfig
from spark_log.cursors_config import CursorsConfig
from spark_log.encryption_config import EncryptionConfig
from spark_log.errors import ConfigError
from spark_log.groups_config import GroupsConfig
from spark_log.limits_config import LimitsConfig
from spark_log.memory_config import MemoryConfig
from spark_log.nats_auth_config import NatsAuthConfig
from spark_log.nats_config import NatsCredentials
from spark_log.storage_options import checked_storage_options
from spark_log.tls_config import ApiTlsConfig, ZkSecurityConfig
from spark_log.toml_file import read_toml
from spark_log.typed_config import from_mapping

FsyncPolicy = Literal["always", "interval", "never"]

DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024
DEFAULT_SEGMENT_MS = 24 * 3600 * 1000
DEFAULT_INDEX_INTERVAL_BYTES = 4096
DEFAULT_FSYNC: FsyncPolicy = "always"
DEFAULT_FSYNC_INTERVAL_MS = 1000
DEFAULT_HW_CHECKPOINT_INTERVAL_MS = 5000
DEFAULT_RETENTION_CHECK_INTERVAL_MS = 30_000

DEFAULT_API_HOST = "127.0.0.1"
DEFAULT_API_PORT = 9644
# Liftbridge's default client port: its clients find a Liftlog node where they found Liftbridge
DEFAULT_LIFTBRIDGE_PORT = 9292
DEFAULT_NATS_URL = "nats://127.0.0.1:4222"
NATS_URL_SCHEMES = ("nats://", "tls://", "ws://", "wss://")
DEFAULT_ZK_CONNECT = "127.0.0.1:2181"
DEFAULT_ZK_ROOT = "/liftlog"
DEFAULT_ZK_SESSION_TIMEOUT_S = 6.0
DEFAULT_REPLICA_LAG_TIME_MAX_S = 10.0
# Kafka's auto.leader.rebalance.enable, leader.imbalance.check.interval.seconds and
# leader.imbalance.per.broker.percentage (see docs/replication.md#preferred-leader-election).
DEFAULT_AUTO_LEADER_REBALANCE_ENABLE = True
DEFAULT_LEADER_IMBALANCE_CHECK_INTERVAL_S = 300.0
DEFAULT_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE = 10.0
# Fetch rate of replicas a reassignment adds, per broker (0: unthrottled); docs/replication.md.
DEFAULT_REASSIGNMENT_THROTTLE_BYTES_PER_S = 50 * 1024 * 1024

DEFAULT_DEDUP_WINDOW_S = 120.0
DEFAULT_DEDUP_MAX_IDS = 1_000_000
DEFAULT_MAX_BATCH_RECORDS = 10_000
DEFAULT_MAX_BATCH_BYTES = 8 * 1024 * 1024
DEFAULT_PENDING_MSGS_LIMIT = 1_000_000
DEFAULT_PENDING_BYTES_LIMIT = 512 * 1024 * 1024
DEFAULT_MAX_FETCH_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_FETCH_RECORDS = 10_000
DEFAULT_MAX_WAIT_MS = 30_000
# Kafka's message.timestamp.after.max.ms default (1 h), applied both ways
DEFAULT_MAX_TIMESTAMP_SKEW_MS = 60 * 60 * 1000

LAKE_DIR_NAME = "lake"
DEFAULT_LAKE_ENABLED = True
DEFAULT_LAKE_EXPORT_MIN_BYTES = 64 * 1024 * 1024
DEFAULT_LAKE_EXPORT_INTERVAL_S = 10.0
DEFAULT_LAKE_MAX_RECORDS_PER_FILE = 500_000
# one export commit is held in memory (log bytes, then Arrow, then Parquet): bounded for the
# node's RSS; compaction's optimize bin-packs the files into larger ones later
DEFAULT_LAKE_MAX_BYTES_PER_FILE = 16 * 1024 * 1024
# export rounds of one node at once: each holds its range in memory (see above)
DEFAULT_LAKE_CONCURRENT_EXPORTS = 1
DEFAULT_LAKE_RETRY_BACKOFF_MAX_S = 30.0
DEFAULT_LAKE_FLUSH_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class LogConfig:
    """How a partition log stores, flushes and retains data."""

    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    segment_ms: int = DEFAULT_SEGMENT_MS
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    fsync: FsyncPolicy = DEFAULT_FSYNC
    fsync_interval_ms: int = DEFAULT_FSYNC_INTERVAL_MS
    hw_checkpoint_interval_ms: int = DEFAULT_HW_CHECKPOINT_INTERVAL_MS
    retention_check_interval_ms: int = DEFAULT_RETENTION_CHECK_INTERVAL_MS

    def __post_init__(self) -> None:
        _positive(self, "segment_bytes", "segment_ms", "index_interval_bytes")
        _positive(self, "fsync_interval_ms", "hw_checkpoint_interval_ms")
        _positive(self, "retention_check_interval_ms")
        if self.segment_bytes < 1024:
            raise ConfigError("log.segment_bytes must be at least 1024")


@dataclass(frozen=True)
class IngestConfig:
    """Bounds of the NATS ingest path (batching, dedup window, subscription buffers)."""

    dedup_window_s: float = DEFAULT_DEDUP_WINDOW_S
    dedup_max_ids: int = DEFAULT_DEDUP_MAX_IDS
    max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    pending_msgs_limit: int = DEFAULT_PENDING_MSGS_LIMIT
    pending_bytes_limit: int = DEFAULT_PENDING_BYTES_LIMIT
    max_fetch_bytes: int = DEFAULT_MAX_FETCH_BYTES
    max_fetch_records: int = DEFAULT_MAX_FETCH_RECORDS
    max_wait_ms: int = DEFAULT_MAX_WAIT_MS
    max_timestamp_skew_ms: int = DEFAULT_MAX_TIMESTAMP_SKEW_MS
    """How far a ``Liftlog-Timestamp`` (streams with ``timestamp_type: create``) may lie
    from the leader's clock, either way, before the record is refused (``invalid_timestamp``):
    a producer with a wrong clock must not put records years into the past or future, where
    retention and timestamp search would misplace them."""

    def __post_init__(self) -> None:
        _positive(self, "dedup_window_s", "dedup_max_ids", "max_batch_records")
        _positive(self, "max_batch_bytes", "pending_msgs_limit", "pending_bytes_limit")
        _positive(self, "max_fetch_bytes", "max_fetch_records", "max_wait_ms")
        _positive(self, "max_timestamp_skew_ms")


@dataclass(frozen=True)
class LakeConfig:
    """Where and how often partition leaders export committed records to the Delta lake.

    ``uri`` is a local path or any URI deltalake supports (``s3://``, ``gs://``, ``az://``);
    empty means ``<data_dir>/lake``. ``storage_options`` are the object store's options
    (``[lake.storage_options]``, names from ``spark_log.storage_options``; credentials may come
    from the environment instead); kept out of ``repr`` since they hold secrets. Every node of
    a cluster must name the same lake, so that a new leader continues where the old one stopped. A
    partition exports when its unexported committed bytes reach ``export_min_bytes`` or its
    oldest unexported record is ``export_interval_s`` old; one Delta commit holds at most
    ``max_records_per_file`` records and ``max_bytes_per_file`` bytes of log; at most
    ``concurrent_exports`` partitions of a node export at once (each round holds its range in
    memory, so together they bound the export's share of the node's RSS).
    """

    enabled: bool = DEFAULT_LAKE_ENABLED
    uri: str = ""
    export_min_bytes: int = DEFAULT_LAKE_EXPORT_MIN_BYTES
    export_interval_s: float = DEFAULT_LAKE_EXPORT_INTERVAL_S
    max_records_per_file: int = DEFAULT_LAKE_MAX_RECORDS_PER_FILE
    max_bytes_per_file: int = DEFAULT_LAKE_MAX_BYTES_PER_FILE
    concurrent_exports: int = DEFAULT_LAKE_CONCURRENT_EXPORTS
    retry_backoff_max_s: float = DEFAULT_LAKE_RETRY_BACKOFF_MAX_S
    flush_timeout_s: float = DEFAULT_LAKE_FLUSH_TIMEOUT_S
    storage_options: dict[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        _positive(self, "export_min_bytes", "export_interval_s", "max_records_per_file")
        _positive(self, "max_bytes_per_file", "retry_backoff_max_s", "flush_timeout_s")
        _positive(self, "concurrent_exports")
        options = checked_storage_options(self.storage_options, "lake.storage_options")
        object.__setattr__(self, "storage_options", options)

    def resolved(self, data_dir: str) -> LakeConfig:
        """This config with ``uri`` made explicit: the default under ``data_dir``, and local
        paths absolute (describe hands the URI to readers that run elsewhere)."""
        uri = self.uri or str(Path(data_dir) / LAKE_DIR_NAME)
        if "://" not in uri:
            uri = os.path.abspath(uri)
        return dataclasses.replace(self, uri=uri)


@dataclass(frozen=True)
class NodeConfig:
    """One ingest node: its identity, where it listens and what it talks to."""

    broker_id: int
    data_dir: str
    api_host: str = DEFAULT_API_HOST
    api_port: int = DEFAULT_API_PORT
    # empty: derived from api_host/api_port (see ``advertised_api_url``)
    api_advertised_url: str = ""
    # Liftbridge's gRPC API (ingest/liftbridge), on api_host; 0 turns it off
    liftbridge_port: int = DEFAULT_LIFTBRIDGE_PORT
    # one NATS server (the historical key) or ``nats_servers``, never both; neither set
    # means DEFAULT_NATS_URL (see ``nats_server_urls``)
    nats_url: str = ""
    nats_servers: tuple[str, ...] = ()
    # empty: the first NATS server (see ``advertised_nats_url``)
    nats_advertised_url: str = ""
    nats: NatsCredentials = field(default_factory=NatsCredentials)
    nats_auth: NatsAuthConfig = field(default_factory=NatsAuthConfig)
    zk_connect: str = DEFAULT_ZK_CONNECT
    zk_root: str = DEFAULT_ZK_ROOT
    zk_session_timeout_s: float = DEFAULT_ZK_SESSION_TIMEOUT_S
    replica_lag_time_max_s: float = DEFAULT_REPLICA_LAG_TIME_MAX_S
    auto_leader_rebalance_enable: bool = DEFAULT_AUTO_LEADER_REBALANCE_ENABLE
    leader_imbalance_check_interval_s: float = DEFAULT_LEADER_IMBALANCE_CHECK_INTERVAL_S
    leader_imbalance_per_broker_percentage: float = DEFAULT_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE
    reassignment_throttle_bytes_per_s: int = DEFAULT_REASSIGNMENT_THROTTLE_BYTES_PER_S
    log: LogConfig = field(default_factory=LogConfig)
    ingest: IngestConfig = field(default_factory=IngestConfig)
    lake: LakeConfig = field(default_factory=LakeConfig)
    auth: AuthConfig = field(default_factory=AuthConfig)
    api_tls: ApiTlsConfig = field(default_factory=ApiTlsConfig)
    zk_security: ZkSecurityConfig = field(default_factory=ZkSecurityConfig)
    encryption: EncryptionConfig = field(default_factory=EncryptionConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    cursors: CursorsConfig = field(default_factory=CursorsConfig)
    groups: GroupsConfig = field(default_factory=GroupsConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)

    def __post_init__(self) -> None:
        if self.broker_id < 0:
            raise ConfigError("broker_id must be >= 0")
        if not 0 < self.api_port < 65536:
            raise ConfigError(f"api_port {self.api_port} is not a TCP port")
        if not 0 <= self.liftbridge_port < 65536:
            raise ConfigError(
                f"liftbridge_port {self.liftbridge_port} is not a TCP port (0 turns it off)"
            )
        if self.liftbridge_port == self.api_port:
            raise ConfigError(f"liftbridge_port and api_port are both {self.api_port}")
        if not self.zk_root.startswith("/") or self.zk_root.endswith("/"):
            raise ConfigError("zk_root must start with '/' and not end with '/'")
        _positive(self, "zk_session_timeout_s", "replica_lag_time_max_s")
        _positive(self, "leader_imbalance_check_interval_s")
        if not 0 <= self.leader_imbalance_per_broker_percentage <= 100:
            raise ConfigError("leader_imbalance_per_broker_percentage must be within 0..100")
        if self.reassignment_throttle_bytes_per_s < 0:
            raise ConfigError("reassignment_throttle_bytes_per_s must be >= 0 (0: unthrottled)")
        _check_nats_servers(self.nats_url, self.nats_servers)
        _check_url(self.api_advertised_url, "api_advertised_url", ("http://", "https://"))
        if self.api_tls.enabled and self.api_advertised_url.startswith("http://"):
            raise ConfigError("api_advertised_url must be https:// when api_tls is set")
        _check_url(self.nats_advertised_url, "nats_advertised_url", NATS_URL_SCHEMES)
        object.__setattr__(self, "nats_servers", tuple(self.nats_servers))
        object.__setattr__(self, "lake", self.lake.resolved(self.data_dir))

    @property
    def api_url(self) -> str:
        """Where this node's REST server listens (the bind address, for local probes);
        ``https://`` when ``api_tls`` is on."""
        return f"{self.api_tls.scheme}://{self.api_host}:{self.api_port}"

    @property
    def advertised_api_url(self) -> str:
        """What the node tells others to use (ZooKeeper registration, /v1/cluster, redirect
        hints): behind NAT or in a container the bind address is unreachable from outside."""
        return self.api_advertised_url.rstrip("/") or self.api_url

    @property
    def advertised_api_host(self) -> str:
        """The host part of ``advertised_api_url`` (the broker registration's ``host``)."""
        return urlsplit(self.advertised_api_url).hostname or self.api_host

    @property
    def advertised_liftbridge_address(self) -> str:
        """``host:port`` of the Liftbridge gRPC API as clients reach it (the advertised API
        host); empty when ``liftbridge_port`` is 0."""
        if not self.liftbridge_port:
            return ""
        return f"{self.advertised_api_host}:{self.liftbridge_port}"

    @property
    def nats_server_urls(self) -> tuple[str, ...]:
        """Every NATS server the node may connect to, in preference order."""
        if self.nats_servers:
            return self.nats_servers
        return (self.nats_url or DEFAULT_NATS_URL,)

    @property
    def advertised_nats_url(self) -> str:
        """The NATS URL the node publishes for clients (``liftlog publish`` without --nats)."""
        return self.nats_advertised_url or self.nats_server_urls[0]


def load_node_config(path: str | Path) -> NodeConfig:
    """Read a TOML node config; every key is checked, unknown keys are an error."""
    return from_mapping(NodeConfig, read_toml(path))


def dump_node_config(config: NodeConfig) -> str:
    """Render a node config as TOML (used by ``liftlog standalone`` to start nodes)."""
    data = dataclasses.asdict(config)
    lines = [_toml_line(k, v) for k, v in data.items() if not isinstance(v, dict)]
    for section, values in data.items():
        if isinstance(values, dict):
            lines.extend(_toml_table(section, values))
    return "\n".join(lines) + "\n"


def _toml_table(name: str, values: dict[str, object]) -> list[str]:
    """``[name]`` with its scalars, then its sub-tables (``[lake.storage_options]``)."""
    lines = [f"\n[{name}]"]
    lines.extend(_toml_line(k, v) for k, v in values.items() if not isinstance(v, dict))
    for key, sub in values.items():
        if isinstance(sub, dict):
            lines.extend(_toml_table(f"{name}.{key}", sub))
    return lines


def _toml_line(key: str, value: object) -> str:
    if isinstance(value, bool):
        return f"{key} = {'true' if value else 'false'}"
    if isinstance(value, (int, float)):
        return f"{key} = {value}"
    if isinstance(value, (list, tuple)):
        return f"{key} = [{', '.join(_toml_string(v) for v in value)}]"
    return f"{key} = {_toml_string(value)}"


def _toml_string(value: object) -> str:
    escaped = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _check_nats_servers(nats_url: str, nats_servers: tuple[str, ...]) -> None:
    """One way to name the servers; every URL has a NATS scheme; no duplicates."""
    if nats_url and nats_servers:
        raise ConfigError("set nats_url or nats_servers, not both (nats_servers = [url] is one)")
    for url in (nats_url, *nats_servers):
        _check_url(url, "nats_servers" if nats_servers else "nats_url", NATS_URL_SCHEMES)
    if len(set(nats_servers)) != len(nats_servers):
        raise ConfigError(f"nats_servers lists a server twice: {list(nats_servers)}")


def _check_url(url: str, key: str, schemes: tuple[str, ...]) -> None:
    if url and not url.startswith(schemes):
        raise ConfigError(f"{key}: {url!r} must start with one of {', '.join(schemes)}")


def _positive(obj: object, *names: str) -> None:
    for name in names:
        if getattr(obj, name) <= 0:
            raise ConfigError(f"{name} must be > 0, got {getattr(obj, name)}")
