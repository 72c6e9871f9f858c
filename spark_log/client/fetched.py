"""One fetch's answer: the committed records, the HW and where the next fetch continues."""

from __future__ import annotations

from dataclasses import dataclass

from spark_log.log import Record


@dataclass(frozen=True, slots=True)
class Fetched:
    records: list[Record]
    high_watermark: int
    next_offset: int
    """Where the next fetch continues: the node's ``Liftlog-Next-Offset``, which may lie past
    the last record returned (a range of a key-compacted lake may hold none)."""
    end_reached: bool = False
    """The fetch's stop timestamp or stop offset is reached (see ``Client.subscribe``)."""
