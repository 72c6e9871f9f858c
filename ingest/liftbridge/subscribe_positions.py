"""Where a Liftbridge subscription starts and where it stops, as offsets of the partition.

Liftbridge resolves both once, when the subscription is made: a named start against the
partition as it is then, STOP_LATEST as the newest committed record then, STOP_TIMESTAMP as
the last record stamped at or before it then. The named starts mean what the REST fetch's
do (``named_start_offset``), and ``earliest`` and time searches reach into the lake below the
local log start (``TieredReads``). Timestamps arrive in Unix nanoseconds; records carry ms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ingest.replica.positions import Stop, named_start_offset
from spark_log.errors import InvalidRequestError
from spark_log.liftbridge import api_pb2 as pb

if TYPE_CHECKING:
    from spark_log.log import PartitionLog

NS_PER_MS = 1_000_000


class PositionReads(Protocol):
    """What positions are resolved against: a partition's reads over both tiers."""

    @property
    def log(self) -> PartitionLog: ...

    async def earliest_offset(self) -> int: ...

    async def offset_for_timestamp(self, timestamp_ms: int) -> int: ...


def ms_to_ns(timestamp_ms: int) -> int:
    return timestamp_ms * NS_PER_MS


def ns_to_ms_ceil(timestamp_ns: int) -> int:
    """The first ms whose records are stamped at or after ``timestamp_ns``."""
    return -(-timestamp_ns // NS_PER_MS)


def ns_to_ms_floor(timestamp_ns: int) -> int:
    """The last ms whose records are stamped at or before ``timestamp_ns``."""
    return timestamp_ns // NS_PER_MS


async def start_offset(reads: PositionReads, request: pb.SubscribeRequest) -> int:
    """The first offset the subscription sends (it may not be committed yet: the
    subscription then waits for it)."""
    position = request.startPosition
    if position == pb.NEW_ONLY:
        return named_start_offset(reads.log, "new-only")
    if position == pb.OFFSET:
        if request.startOffset < 0:
            raise InvalidRequestError(f"startOffset must be >= 0; got {request.startOffset}")
        return request.startOffset
    if position == pb.EARLIEST:
        return await reads.earliest_offset()
    if position == pb.LATEST:
        return named_start_offset(reads.log, "latest")
    if position == pb.TIMESTAMP:
        return await reads.offset_for_timestamp(ns_to_ms_ceil(request.startTimestamp))
    raise InvalidRequestError(f"unknown startPosition {position}")


async def stop_position(reads: PositionReads, request: pb.SubscribeRequest) -> Stop:
    """The last offset the subscription sends (inclusive), or none (STOP_ON_CANCEL). A stop
    behind the start ends the subscription as soon as it is made."""
    position = request.stopPosition
    if position == pb.STOP_ON_CANCEL:
        return Stop()
    if position == pb.STOP_OFFSET:
        return Stop(offset=request.stopOffset)
    if position == pb.STOP_LATEST:
        return Stop(offset=reads.log.high_watermark - 1)
    if position == pb.STOP_TIMESTAMP:
        later = await reads.offset_for_timestamp(ns_to_ms_floor(request.stopTimestamp) + 1)
        return Stop(offset=later - 1)
    raise InvalidRequestError(f"unknown stopPosition {position}")
