"""A consumer fetch over both tiers: below the local log start from the lake
(``ingest.lake.tier``), from there on from the replica's log.

Which tier serves is decided against the log start as it is when the read begins. Retention
may move it between that check and the local read; the local read then fails with
OffsetOutOfRangeError and the fetch is routed again, to the lake, which holds everything
retention deleted. Positions follow the two tiers as well: ``earliest`` is the lake's first
offset when the lake holds records below the log start, and a time search whose answer is the
log's first record also searches the lake, where an earlier record may qualify.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ingest.lake.tier import LakePartition, LakeTier
from ingest.replica.read_path import FetchResult
from spark_log.errors import KeyUnavailableError, OffsetOutOfRangeError
from spark_log.lake.storage import lake_storage
from spark_log.log import PartitionLog
from spark_log.log.fetch_table import records_of_fetch_table

if TYPE_CHECKING:
    from ingest.replica.replica import PartitionReplica

ROUTE_ATTEMPTS = 2
"""A local read that retention overtook is routed once more (then to the lake)."""


class TieredReads:
    """A replica's committed reads with the lake in front of its log start (a
    ``fetch_positions.FetchSource``)."""

    def __init__(self, replica: PartitionReplica, lake: LakeTier) -> None:
        self._replica = replica
        self._lake = lake

    @property
    def log(self) -> PartitionLog:
        return self._replica.log

    async def fetch(
        self, offset: int, max_records: int, max_bytes: int, wait_ms: int, *, arrow: bool = False
    ) -> FetchResult:
        """Committed records from ``offset``: a lake range below the log start (never
        crossing it), else the replica's own read (see ``ReadPath.fetch``)."""
        for attempt in range(ROUTE_ATTEMPTS):
            log_start = self.log.log_start_offset
            if offset < log_start:
                return await self._from_lake(offset, log_start, max_records, max_bytes, arrow)
            try:
                return await self._replica.fetch(
                    offset, max_records, max_bytes, wait_ms, arrow=arrow
                )
            except OffsetOutOfRangeError:
                overtaken = offset < self.log.log_start_offset
                if not overtaken or attempt + 1 == ROUTE_ATTEMPTS:
                    raise
        raise OffsetOutOfRangeError(f"offset {offset} of {self._name} moved out of range")

    async def earliest_offset(self) -> int:
        """The lake's first offset when the lake holds records below the log start, else the
        log start."""
        log_start = self.log.log_start_offset
        part = lake_partition(self._replica) if log_start > 0 else None
        if part is None:
            return log_start
        first = await self._lake.first_offset(part)
        return first if first is not None and first < log_start else log_start

    async def offset_for_timestamp(self, timestamp_ms: int) -> int:
        """The first offset at or after ``timestamp_ms`` in either tier, capped by the HW."""
        found = await self._replica.reads.offset_for_timestamp(timestamp_ms)
        log_start = self.log.log_start_offset
        if found > log_start or log_start == 0:
            return found
        part = lake_partition(self._replica)
        if part is None:
            return found
        in_lake = await self._lake.offset_for_timestamp(part, timestamp_ms, log_start)
        return in_lake if in_lake is not None else found

    async def _from_lake(
        self, offset: int, log_start: int, max_records: int, max_bytes: int, arrow: bool
    ) -> FetchResult:
        part = lake_partition(self._replica)
        if part is None:
            raise OffsetOutOfRangeError(
                f"offset {offset} is below the log start {log_start} of {self._name} "
                "and no lake holds it"
            )
        read = await self._lake.read(part, offset, log_start, max_records, max_bytes)
        hw = self.log.high_watermark
        if arrow:
            return FetchResult([], hw, log_start, read.table, read.next_offset)
        return FetchResult(
            records_of_fetch_table(read.table), hw, log_start, None, read.next_offset
        )

    @property
    def _name(self) -> str:
        return f"{self._replica.spec.name}/{self._replica.partition}"


def lake_partition(replica: PartitionReplica) -> LakePartition | None:
    """Where the replica's lake history is (None: the lake is disabled, or the stream is
    internal and never exported). An encrypted stream's files need its data key, which this
    node must have loaded (KeyUnavailableError until then, as for its local reads)."""
    uri = replica.lake_table_uri
    if uri is None:
        return None
    spec = replica.spec
    crypto = None
    if spec.encryption:
        cipher = replica.cipher
        if cipher is None:
            raise KeyUnavailableError(
                f"{spec.name}/{replica.partition} is encrypted and this node has not loaded "
                "its data key yet"
            )
        crypto = cipher.file_crypto(spec.name, replica.partition)
    return LakePartition(
        spec.name,
        replica.partition,
        spec.partitions,
        uri,
        lake_storage(replica.config.lake).at(uri),
        crypto,
        replica.schemas,
    )
