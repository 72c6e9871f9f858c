"""The ``[cursors]`` table of a node config: the shape of the ``__cursors`` stream.

``__cursors`` is created by the first cursor request, with these settings; later changes to
them do not touch a stream that exists. Kafka's ``__consumer_offsets`` has 50 partitions; every
partition costs a replica fetch loop on every node that holds it, so the default here is small.
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_log.errors import ConfigError
from spark_log.stream_spec import MAX_PARTITIONS

DEFAULT_CURSORS_PARTITIONS = 4
DEFAULT_CURSORS_REPLICATION_FACTOR = 3
DEFAULT_CURSORS_LOAD_TIMEOUT_S = 10.0
DEFAULT_CURSORS_SNAPSHOT_MIN_RECORDS = 10_000


@dataclass(frozen=True)
class CursorsConfig:
    """``partitions``: of ``__cursors`` (cursor ids hash over them, so it never grows).
    ``replication_factor``: wanted replicas, capped by the brokers live at creation.
    ``load_timeout_s``: how long a request waits for the partition's leader to exist and to
    have read its log, before answering 503 (retriable).
    ``snapshot_min_records``: the leader compacts a partition (re-appends its live cursors,
    drops the segments before them) once it appended more than this many records, and more
    than 4 times its live cursors, since the last time."""

    partitions: int = DEFAULT_CURSORS_PARTITIONS
    replication_factor: int = DEFAULT_CURSORS_REPLICATION_FACTOR
    load_timeout_s: float = DEFAULT_CURSORS_LOAD_TIMEOUT_S
    snapshot_min_records: int = DEFAULT_CURSORS_SNAPSHOT_MIN_RECORDS

    def __post_init__(self) -> None:
        if not 1 <= self.partitions <= MAX_PARTITIONS:
            raise ConfigError(f"cursors.partitions must be in 1..{MAX_PARTITIONS}")
        if self.replication_factor < 1:
            raise ConfigError("cursors.replication_factor must be >= 1")
        if not self.load_timeout_s > 0:
            raise ConfigError("cursors.load_timeout_s must be > 0")
        if self.snapshot_min_records < 1:
            raise ConfigError("cursors.snapshot_min_records must be >= 1")
