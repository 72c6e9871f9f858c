"""What a drained replica is, as the checker sees it: a plain value, free of storage code.

Kept apart from ``drain.py`` so the checker (and its unit tests) build replica sets by hand
without opening any log.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class ReplicaState:
    """One broker's copy of one partition, read offline after a scenario."""

    broker_id: int
    partition: int
    records: tuple[tuple[int, bytes], ...]
    """(offset, payload) in log order, from the log start to the LEO."""
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    """The HW the log reopened with: the clean-close checkpoint clamped to [start, LEO]."""
    checkpointed_high_watermark: int | None = None
    """The ``high-watermark`` file as found, before opening (None when absent)."""
    epochs: tuple[tuple[int, int], ...] = field(default_factory=tuple)
    """(leader epoch, start offset) entries of the leader-epoch checkpoint."""
    clean_shutdown: bool = True

    def committed(self) -> list[tuple[int, bytes]]:
        """The records below this replica's HW."""
        return [(o, p) for o, p in self.records if o < self.high_watermark]

    def to_json(self) -> dict[str, Any]:
        return {
            "broker_id": self.broker_id,
            "partition": self.partition,
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "high_watermark": self.high_watermark,
            "checkpointed_high_watermark": self.checkpointed_high_watermark,
            "epochs": [list(e) for e in self.epochs],
            "clean_shutdown": self.clean_shutdown,
            "records": len(self.records),
        }


Replicas = Mapping[int, Mapping[int, ReplicaState]]
"""broker id -> partition -> that broker's replica (a broker lists only what it stores)."""


def by_partition(replicas: Replicas) -> dict[int, list[ReplicaState]]:
    """partition -> its replicas, ordered by broker id."""
    out: dict[int, list[ReplicaState]] = {}
    for broker in sorted(replicas):
        for partition, state in sorted(replicas[broker].items()):
            out.setdefault(partition, []).append(state)
    return out
