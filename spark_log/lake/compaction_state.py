"""Key compaction's state, kept in the stream's Delta table as app transactions.

Kafka's log cleaner keeps a ``cleaner-offset-checkpoint`` per partition (how far the log is
clean). Liftlog keeps the same fact, and two more, where every reader and every compaction
process finds them whatever machine it runs on: in the table, as Delta app transactions
(``txn`` actions, carried into checkpoints, so log cleanup never loses them).

- ``<prefix>:<stream>:compaction`` — the run id of the last compaction commit: the commit time
  in ms, strictly increasing. Every compaction (and the optimize that follows it) commits with
  it and checks it first, so two racing compactions cannot both commit (delta-rs rejects a
  commit whose app id another commit moved since its snapshot). It also tells ``liftlog
  compact --watch`` when a stream was last compacted, so a restarted scheduler does not
  compact again at once.
- ``<prefix>:<stream>:<p>:cleaned`` — the partition's cleaned offset: every record below it is
  compacted (Kafka's cleaner checkpoint). A partition whose boundary has not moved past it has
  nothing new to compact.
- ``<prefix>:<stream>:<p>:tombstones`` — the earliest time (ms) a tombstone kept by the last
  compaction may expire; 0 when none was kept. Once it passes, the partition is worth
  compacting again even with no new records.

The exporter's own ids (``layout.app_id``, ``<prefix>:<stream>:<p>``) never collide with
these: stream names cannot contain ``:``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from spark_log.lake.layout import APP_ID_PREFIX

NO_TOMBSTONES = 0
COMPACTION_METADATA_KEY = "liftlog.compaction"
"""The commit-info key under which compaction and its optimize describe themselves (what
``DeltaTable.history()`` shows; the exporter's commits use ``liftlog``)."""


def compaction_app_id(stream: str) -> str:
    """The app id every compaction and post-compaction optimize of ``stream`` commits with."""
    return f"{APP_ID_PREFIX}:{stream}:compaction"


def cleaned_app_id(stream: str, partition: int) -> str:
    return f"{APP_ID_PREFIX}:{stream}:{partition}:cleaned"


def tombstones_app_id(stream: str, partition: int) -> str:
    return f"{APP_ID_PREFIX}:{stream}:{partition}:tombstones"


@dataclass(frozen=True)
class PartitionCompactionState:
    """What the last compaction left in one partition (None: never compacted)."""

    cleaned_offset: int | None
    tombstones_expire_at_ms: int | None

    def tombstones_due(self, now_ms: int) -> bool:
        """Whether a tombstone kept last time may have outlived its delete retention now."""
        expiry = self.tombstones_expire_at_ms
        return expiry is not None and expiry != NO_TOMBSTONES and now_ms >= expiry


@dataclass(frozen=True)
class CompactionState:
    """The compaction facts of one table version."""

    last_run: int | None
    partitions: dict[int, PartitionCompactionState]

    def partition(self, partition: int) -> PartitionCompactionState:
        return self.partitions.get(partition, PartitionCompactionState(None, None))


def read_compaction_state(
    transaction_version: Callable[[str], int | None], stream: str, partitions: int
) -> CompactionState:
    """The state from a snapshot's app transactions (``transaction_version`` looks one up)."""
    return CompactionState(
        last_run=transaction_version(compaction_app_id(stream)),
        partitions={
            p: PartitionCompactionState(
                cleaned_offset=transaction_version(cleaned_app_id(stream, p)),
                tombstones_expire_at_ms=transaction_version(tombstones_app_id(stream, p)),
            )
            for p in range(partitions)
        },
    )


def next_run_id(last_run: int | None, now_ms: int) -> int:
    """A run id above the last one: the current time, or one more when the clock lags."""
    return max(now_ms, (last_run or 0) + 1)
