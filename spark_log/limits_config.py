"""Bounds on what one client may ask of a node or a cluster: the ``[limits]`` table of a node
config (docs/security.md#limits).

A stranger who reaches the API must not be able to fill a node's memory with one request or
ZooKeeper with a million streams. The per-request fetch and batch bounds live in ``[ingest]``
(they predate this table); the rest are here, each a key with a named default.
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_log.errors import ConfigError
from spark_log.stream_spec import MAX_PARTITIONS, MAX_STREAM_NAME_LENGTH

DEFAULT_MAX_REQUEST_BYTES = 64 * 1024 * 1024
# Kafka allows 249 characters; a stream's directory and lake table are named
# ``<name>@<created_at_ms>``, which must fit a 255-byte file name, so 200 is the ceiling here.
DEFAULT_MAX_STREAM_NAME_LENGTH = MAX_STREAM_NAME_LENGTH
DEFAULT_MAX_STREAMS = 10_000
DEFAULT_MAX_PARTITIONS_PER_STREAM = MAX_PARTITIONS
DEFAULT_MAX_PARTITIONS_TOTAL = 100_000


@dataclass(frozen=True)
class LimitsConfig:
    """Every limit is a config key with a default; a request over one gets a typed error.

    ``max_request_bytes``: any REST request body (413 ``request_too_large``).
    ``max_stream_name_length``: characters of a stream name (at most 200, see above).
    ``max_streams``: streams in the cluster; ``max_partitions_per_stream`` and
    ``max_partitions_total``: partitions of one stream and of all streams together (a create
    over a count is 409 ``limit_exceeded``, a spec over a per-stream bound 422).
    """

    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    max_stream_name_length: int = DEFAULT_MAX_STREAM_NAME_LENGTH
    max_streams: int = DEFAULT_MAX_STREAMS
    max_partitions_per_stream: int = DEFAULT_MAX_PARTITIONS_PER_STREAM
    max_partitions_total: int = DEFAULT_MAX_PARTITIONS_TOTAL

    def __post_init__(self) -> None:
        for name in (
            "max_request_bytes",
            "max_stream_name_length",
            "max_streams",
            "max_partitions_per_stream",
            "max_partitions_total",
        ):
            if getattr(self, name) <= 0:
                raise ConfigError(f"limits.{name} must be > 0, got {getattr(self, name)}")
        if self.max_stream_name_length > MAX_STREAM_NAME_LENGTH:
            raise ConfigError(
                f"limits.max_stream_name_length must be at most {MAX_STREAM_NAME_LENGTH} "
                "(a stream's directory name must fit a file name)"
            )
        if self.max_partitions_per_stream > MAX_PARTITIONS:
            raise ConfigError(f"limits.max_partitions_per_stream must be at most {MAX_PARTITIONS}")
