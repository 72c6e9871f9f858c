"""What one partition holds right now, across lake and log, and what a range may read of it.

The lake's contract: every offset below the lake offset is in the lake (except records a key
compaction removed later: gaps there are not loss), and the log holds ``[log start, HW)`` with
log start <= lake offset. So the only offsets that can be missing are ``[lake offset, log
start)``: all below the log start when there is no lake, nothing when the contract holds. A
range crossing that hole fails with ``failOnDataLoss`` (Kafka's default) or skips it.
"""

from __future__ import annotations

from dataclasses import dataclass

from datasource.errors import DataLossError, InvalidOptionError
from datasource.lake_view import LakeView
from datasource.offsets import EARLIEST, LATEST
from datasource.splitting import Segment
from datasource.stream_view import PartitionView


@dataclass(frozen=True)
class PartitionBounds:
    partition: int
    log_start: int
    high_watermark: int
    lake_offset: int
    """First offset not in the lake (0: no lake, or nothing exported)."""
    lake_first: int | None
    """Smallest offset a lake file holds (None: no file)."""

    @property
    def earliest(self) -> int:
        """Kafka's "earliest": the first offset that still exists somewhere."""
        if self.lake_offset == 0:
            return self.log_start
        first = self.lake_first if self.lake_first is not None else self.lake_offset
        return min(first, self.log_start)

    @property
    def hole(self) -> tuple[int, int] | None:
        """Offsets neither the lake nor the log holds, as ``[lo, hi)``."""
        if self.log_start > self.lake_offset:
            return self.lake_offset, self.log_start
        return None

    def resolve(self, value: int) -> int:
        """An offset spec value (EARLIEST, LATEST or an offset) as an offset."""
        if value == EARLIEST:
            return self.earliest
        if value == LATEST:
            return self.high_watermark
        return value


def partition_bounds(stream: str, view: PartitionView, lake: LakeView | None) -> PartitionBounds:
    log_start, hw = view.require_offsets(stream)
    p = view.partition
    return PartitionBounds(
        partition=p,
        log_start=log_start,
        high_watermark=hw,
        lake_offset=min(lake.lake_offset(p), hw) if lake is not None else 0,
        lake_first=lake.first_offset(p) if lake is not None else None,
    )


def readable_segments(
    stream: str, bounds: PartitionBounds, start: int, end: int, fail_on_data_loss: bool
) -> list[Segment]:
    """``[start, end)`` without the hole: DataLossError if it crosses the hole and
    ``fail_on_data_loss``, otherwise the parts on either side of it."""
    p = bounds.partition
    if start >= end:
        return []
    hole = bounds.hole
    if hole is None or end <= hole[0] or start >= hole[1]:
        return [Segment(p, start, end)]
    if fail_on_data_loss:
        lost = (max(start, hole[0]), min(end, hole[1]))
        raise DataLossError(
            f"offsets [{lost[0]}, {lost[1]}) of {stream}/{p} are gone: the log starts at "
            f"{bounds.log_start} and the lake holds offsets below {bounds.lake_offset}; set "
            "failOnDataLoss=false to read what remains"
        )
    parts = [Segment(p, start, min(end, hole[0])), Segment(p, max(start, hole[1]), end)]
    return [s for s in parts if s.size > 0]


def check_range(stream: str, bounds: PartitionBounds, start: int, end: int) -> None:
    """Kafka's checks of explicit offsets: the end exists, and the start is not after it."""
    p = bounds.partition
    if end > bounds.high_watermark:
        raise InvalidOptionError(
            f"endingOffsets for {stream}/{p} is {end}, beyond its high watermark "
            f"{bounds.high_watermark} (use -1 or 'latest' for the current end)"
        )
    if start > end:
        raise InvalidOptionError(
            f"startingOffsets {start} of {stream}/{p} is after its ending offset {end}"
        )
