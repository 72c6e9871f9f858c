"""What a compaction run is told: the stream's table and settings, and the operator's options.

Every default is a named constant; options are validated when built, so a bad flag fails
before Spark starts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from datasource.compaction.errors import InvalidCompactionOptionError
from datasource.lake_keys import LakeKeySource
from spark_log.lake.errors import EncryptedLakeKeysError
from spark_log.lake.maintenance import DELTA_DEFAULT_RETENTION_HOURS
from spark_log.lake.packing import DEFAULT_TARGET_FILE_BYTES
from spark_log.lake.storage import LakeStorage

Progress = Callable[[str], None]
"""Where a run reports what it is doing (the CLI prints each line with the elapsed time)."""
DEFAULT_MAX_RECORDS_PER_FILE = 1_000_000
"""Compacted files are split at this many records (Spark's ``maxRecordsPerFile``), so one file
stays a reasonable unit of work for readers; the exporter uses the same bound."""
DEFAULT_COMMIT_RETRIES = 2
"""How often a compaction that lost its commit race starts again from the new snapshot."""
DEFAULT_VACUUM_RETENTION_HOURS = DELTA_DEFAULT_RETENTION_HOURS
SAFE_VACUUM_RETENTION_HOURS = 1.0
"""Below this, ``liftlog compact`` warns: a query or export in flight may still need the files."""


@dataclass(frozen=True)
class CompactionTarget:
    """The stream to compact: its Delta table and its spec's compaction settings."""

    stream: str
    table_uri: str
    partitions: int
    delete_retention_ms: int
    compaction_enabled: bool = True
    compaction_interval_s: float | None = None
    storage_options: Mapping[str, str] = field(default_factory=dict, repr=False)
    """The lake's object-store options (delta-rs names: ``AWS_ENDPOINT_URL``...), from the
    operator (``--lake-option``, then the session conf once a run starts), never from
    ``describe``, which carries no secrets. Kept out of ``repr`` so a logged target shows no
    credentials."""
    environment_options: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Options found in the standard environment (``AWS_*``): the lowest layer, under the
    Spark session conf (``spark.liftlog.lake.*``) and ``storage_options``."""
    encrypted: bool = False
    """The stream encrypts values at rest: its lake files are Parquet modular-encrypted, and
    rewriting them needs the partitions' data keys (``keys``)."""
    keys: LakeKeySource | None = field(default=None, repr=False)
    """Where the tasks fetch those data keys (the nodes the target was described by)."""

    def file_keys(self) -> LakeKeySource | None:
        """The key source a rewrite of this stream's files needs (None: a clear stream);
        an encrypted stream without one is refused rather than rewritten in clear."""
        if not self.encrypted:
            return None
        if self.keys is None:
            raise EncryptedLakeKeysError(
                f"stream {self.stream} is encrypted and no node was given to fetch its data "
                "keys from: its lake files cannot be rewritten"
            )
        return self.keys

    @property
    def storage(self) -> LakeStorage:
        """The table's URI with the lake's store options: how every part of a run reaches it."""
        return LakeStorage(self.table_uri, {**self.environment_options, **self.storage_options})

    def with_session_options(self, session: Mapping[str, str]) -> CompactionTarget:
        """This target with the session conf's lake options under its own (its win)."""
        if not session:
            return self
        merged = {**session, **{k.lower(): v for k, v in self.storage_options.items()}}
        return dataclasses.replace(self, storage_options=merged)


@dataclass(frozen=True)
class CompactionOptions:
    """How to run one compaction (the ``liftlog compact`` flags)."""

    boundary_offset: int | None = None
    """Compact only records below this offset (capped at each partition's lake offset)."""
    partitions: tuple[int, ...] | None = None
    """Only these partitions (None: all)."""
    full: bool = False
    """Recompute partitions the state says are already compacted."""
    force: bool = False
    """Compact a stream created without ``compaction: true``."""
    max_records_per_file: int = DEFAULT_MAX_RECORDS_PER_FILE
    commit_retries: int = DEFAULT_COMMIT_RETRIES
    optimize: bool = True
    """Pack small files after the compaction (Delta's OPTIMIZE bin-packing)."""
    optimize_target_bytes: int = DEFAULT_TARGET_FILE_BYTES
    vacuum: bool = True
    vacuum_retention_hours: float = DEFAULT_VACUUM_RETENTION_HOURS

    def __post_init__(self) -> None:
        if self.boundary_offset is not None and self.boundary_offset < 0:
            raise InvalidCompactionOptionError("--boundary-offset must be >= 0")
        if self.partitions is not None and any(p < 0 for p in self.partitions):
            raise InvalidCompactionOptionError("--partition must be >= 0")
        if self.max_records_per_file <= 0:
            raise InvalidCompactionOptionError("--max-records-per-file must be > 0")
        if self.commit_retries < 0:
            raise InvalidCompactionOptionError("--retries must be >= 0")
        if self.optimize_target_bytes <= 0:
            raise InvalidCompactionOptionError("--optimize-target-mb must be > 0")
        if self.vacuum_retention_hours < 0:
            raise InvalidCompactionOptionError("--vacuum-retention-hours must be >= 0")
