"""Typed, frozen configuration of a node and of its partition logs.

Every default is a named constant so docs, CLI help and tests name the same number. Node
configs are TOML files (``liftlog node --config FILE``); unknown keys are an error.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from spark_log.errors import ConfigError
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
DEFAULT_NATS_URL = "nats://127.0.0.1:4222"
DEFAULT_ZK_CONNECT = "127.0.0.1:2181"
DEFAULT_ZK_ROOT = "/liftlog"
DEFAULT_ZK_SESSION_TIMEOUT_S = 6.0
DEFAULT_REPLICA_LAG_TIME_MAX_S = 10.0

DEFAULT_DEDUP_WINDOW_S = 120.0
DEFAULT_DEDUP_MAX_IDS = 1_000_000
DEFAULT_MAX_BATCH_RECORDS = 10_000
DEFAULT_MAX_BATCH_BYTES = 8 * 1024 * 1024
DEFAULT_PENDING_MSGS_LIMIT = 1_000_000
DEFAULT_PENDING_BYTES_LIMIT = 512 * 1024 * 1024
DEFAULT_MAX_FETCH_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_FETCH_RECORDS = 10_000
DEFAULT_MAX_WAIT_MS = 30_000

LAKE_DIR_NAME = "lake"
DEFAULT_LAKE_ENABLED = True
DEFAULT_LAKE_EXPORT_MIN_BYTES = 64 * 1024 * 1024
DEFAULT_LAKE_EXPORT_INTERVAL_S = 10.0
DEFAULT_LAKE_MAX_RECORDS_PER_FILE = 500_000
# one export commit is held in memory (log bytes, then Arrow, then Parquet): bounded for the
# node's RSS; compaction's optimize bin-packs the files into larger ones later
DEFAULT_LAKE_MAX_BYTES_PER_FILE = 32 * 1024 * 1024
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

    def __post_init__(self) -> None:
        _positive(self, "dedup_window_s", "dedup_max_ids", "max_batch_records")
        _positive(self, "max_batch_bytes", "pending_msgs_limit", "pending_bytes_limit")
        _positive(self, "max_fetch_bytes", "max_fetch_records", "max_wait_ms")


@dataclass(frozen=True)
class LakeConfig:
    """Where and how often partition leaders export committed records to the Delta lake.

    ``uri`` is a local path or any URI deltalake supports (``s3://``, ``gs://``, ``az://``, with
    credentials from the environment); empty means ``<data_dir>/lake``. Every node of a cluster
    must name the same lake, so that a new leader continues where the old one stopped. A
    partition exports when its unexported committed bytes reach ``export_min_bytes`` or its
    oldest unexported record is ``export_interval_s`` old; one Delta commit holds at most
    ``max_records_per_file`` records and ``max_bytes_per_file`` bytes of log.
    """

    enabled: bool = DEFAULT_LAKE_ENABLED
    uri: str = ""
    export_min_bytes: int = DEFAULT_LAKE_EXPORT_MIN_BYTES
    export_interval_s: float = DEFAULT_LAKE_EXPORT_INTERVAL_S
    max_records_per_file: int = DEFAULT_LAKE_MAX_RECORDS_PER_FILE
    max_bytes_per_file: int = DEFAULT_LAKE_MAX_BYTES_PER_FILE
    retry_backoff_max_s: float = DEFAULT_LAKE_RETRY_BACKOFF_MAX_S
    flush_timeout_s: float = DEFAULT_LAKE_FLUSH_TIMEOUT_S

    def __post_init__(self) -> None:
        _positive(self, "export_min_bytes", "export_interval_s", "max_records_per_file")
        _positive(self, "max_bytes_per_file", "retry_backoff_max_s", "flush_timeout_s")

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
    nats_url: str = DEFAULT_NATS_URL
    zk_connect: str = DEFAULT_ZK_CONNECT
    zk_root: str = DEFAULT_ZK_ROOT
    zk_session_timeout_s: float = DEFAULT_ZK_SESSION_TIMEOUT_S
    replica_lag_time_max_s: float = DEFAULT_REPLICA_LAG_TIME_MAX_S
    log: LogConfig = field(default_factory=LogConfig)
    ingest: IngestConfig = field(default_factory=IngestConfig)
    lake: LakeConfig = field(default_factory=LakeConfig)

    def __post_init__(self) -> None:
        if self.broker_id < 0:
            raise ConfigError("broker_id must be >= 0")
        if not 0 < self.api_port < 65536:
            raise ConfigError(f"api_port {self.api_port} is not a TCP port")
        if not self.zk_root.startswith("/") or self.zk_root.endswith("/"):
            raise ConfigError("zk_root must start with '/' and not end with '/'")
        _positive(self, "zk_session_timeout_s", "replica_lag_time_max_s")
        object.__setattr__(self, "lake", self.lake.resolved(self.data_dir))

    @property
    def api_url(self) -> str:
        return f"http://{self.api_host}:{self.api_port}"


def load_node_config(path: str | Path) -> NodeConfig:
    """Read a TOML node config; every key is checked, unknown keys are an error."""
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read config {path}: {exc}") from exc
    return from_mapping(NodeConfig, data)


def dump_node_config(config: NodeConfig) -> str:
    """Render a node config as TOML (used by ``liftlog standalone`` to start nodes)."""
    data = dataclasses.asdict(config)
    lines = [_toml_line(k, v) for k, v in data.items() if not isinstance(v, dict)]
    for section, values in data.items():
        if isinstance(values, dict):
            lines.append(f"\n[{section}]")
            lines.extend(_toml_line(k, v) for k, v in values.items())
    return "\n".join(lines) + "\n"


def _toml_line(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return f"{key} = {'true' if value else 'false'}"
    if isinstance(value, (int, float)):
        return f"{key} = {value}"
    escaped = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'{key} = "{escaped}"'


def _positive(obj: object, *names: str) -> None:
    for name in names:
        if getattr(obj, name) <= 0:
            raise ConfigError(f"{name} must be > 0, got {getattr(obj, name)}")
