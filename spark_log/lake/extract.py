"""Read one committed offset range of a partition log as a lake table (blocking: run it in an
executor).

The range is capped by records and by log bytes, so one export's memory and one Parquet file
stay bounded whatever backlog a partition has; the caller exports the rest in later rounds.
Batches are CRC-checked on the way: a corrupt batch must never reach the lake.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from spark_log.lake.convert import to_lake_table
from spark_log.lake.layout import LAKE_SCHEMA
from spark_log.log import PartitionLog
from spark_log.log.records import rows_in_range

if TYPE_CHECKING:
    from spark_log.crypto.value_cipher import ValueCipher

READ_CHUNK_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class LakeRange:
    """Records ``[start_offset, end_offset)`` of one partition as LAKE_SCHEMA rows."""

    start_offset: int
    end_offset: int
    table: pa.Table
    log_bytes: int

    @property
    def records(self) -> int:
        return self.end_offset - self.start_offset


def read_range(
    log: PartitionLog,
    partition: int,
    start_offset: int,
    end_offset: int,
    *,
    max_records: int,
    max_bytes: int,
    cipher: ValueCipher | None = None,
) -> LakeRange:
    """Records from ``start_offset`` up to ``end_offset`` (the HW), at most ``max_records``
    and about ``max_bytes`` of log (always at least one batch, so a range always advances).

    ``cipher``: an encrypted stream's partition cipher; values come out decrypted (the lake
    file is encrypted as a whole by Parquet modular encryption, ``encrypted_export``), and
    without it an encrypted batch is refused (KeyUnavailableError)."""
    stored: list[pa.RecordBatch] = []
    firsts: list[int] = []
    offset, log_bytes = start_offset, 0
    while offset < end_offset and offset - start_offset < max_records and log_bytes < max_bytes:
        data = log.read(offset, min(READ_CHUNK_BYTES, max_bytes - log_bytes), end_offset)
        if not data:
            break
        room = max_records - (offset - start_offset)
        pieces = rows_in_range(
            data,
            offset,
            end_offset,
            room,
            verify=True,
            cipher=cipher,
        )
        for piece in pieces:
            stored.append(piece.rows)
            firsts.append(piece.first_offset)
            offset = piece.first_offset + piece.rows.num_rows
            log_bytes += piece.stored_bytes
    table = to_lake_table(stored, partition, firsts) if stored else LAKE_SCHEMA.empty_table()
    return LakeRange(start_offset, offset, table, log_bytes)
