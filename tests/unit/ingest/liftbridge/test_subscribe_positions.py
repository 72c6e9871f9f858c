"""Start and stop positions of a Liftbridge subscription against a partition's offsets, and
the nanosecond timestamps of the API against our milliseconds."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from ingest.liftbridge.subscribe_positions import (
    ms_to_ns,
    ns_to_ms_ceil,
    ns_to_ms_floor,
    start_offset,
    stop_position,
)
from ingest.replica.positions import Stop
from spark_log.errors import InvalidRequestError
from spark_log.liftbridge import api_pb2 as pb


@dataclass
class FakeLog:
    high_watermark: int
    log_start_offset: int


@dataclass
class FakeReads:
    """Offsets 10..19 in the log (the lake below), record ``o`` stamped ``1000 + 10 * o`` ms."""

    log: FakeLog = field(default_factory=lambda: FakeLog(high_watermark=20, log_start_offset=10))
    lake_start: int = 0
    asked: list[int] = field(default_factory=list)

    async def earliest_offset(self) -> int:
        return self.lake_start

    async def offset_for_timestamp(self, timestamp_ms: int) -> int:
        self.asked.append(timestamp_ms)
        first = -(-(timestamp_ms - 1000) // 10)
        return min(max(first, 0), self.log.high_watermark)


def test_nanoseconds_round_toward_the_records_they_include() -> None:
    assert ms_to_ns(1500) == 1_500_000_000
    assert ns_to_ms_ceil(1_500_000_000) == 1500
    assert ns_to_ms_ceil(1_500_000_001) == 1501  # a start just after 1500 ms excludes it
    assert ns_to_ms_floor(1_500_999_999) == 1500  # a stop just before 1501 ms excludes it
    assert ns_to_ms_floor(-1) == -1 and ns_to_ms_ceil(-1) == 0


@pytest.mark.parametrize(
    ("request_", "offset"),
    [
        (pb.SubscribeRequest(startPosition=pb.NEW_ONLY), 20),
        (pb.SubscribeRequest(startPosition=pb.LATEST), 19),
        (pb.SubscribeRequest(startPosition=pb.EARLIEST), 0),  # the lake's first offset
        (pb.SubscribeRequest(startPosition=pb.OFFSET, startOffset=7), 7),
        (pb.SubscribeRequest(startPosition=pb.TIMESTAMP, startTimestamp=1_050_000_000), 5),
        (pb.SubscribeRequest(startPosition=pb.TIMESTAMP, startTimestamp=1_050_000_001), 6),
        (pb.SubscribeRequest(startPosition=pb.TIMESTAMP, startTimestamp=9_000_000_000), 20),
    ],
)
async def test_every_start_position(request_: pb.SubscribeRequest, offset: int) -> None:
    assert await start_offset(FakeReads(), request_) == offset


async def test_latest_on_an_empty_partition_waits_for_the_first_record() -> None:
    empty = FakeReads(log=FakeLog(high_watermark=0, log_start_offset=0))
    assert await start_offset(empty, pb.SubscribeRequest(startPosition=pb.LATEST)) == 0


@pytest.mark.parametrize(
    ("request_", "stop"),
    [
        (pb.SubscribeRequest(stopPosition=pb.STOP_ON_CANCEL), Stop()),
        (pb.SubscribeRequest(stopPosition=pb.STOP_OFFSET, stopOffset=12), Stop(offset=12)),
        (pb.SubscribeRequest(stopPosition=pb.STOP_LATEST), Stop(offset=19)),
        # the last record stamped at or before the stop: 1050 ms is offset 5's
        (pb.SubscribeRequest(stopPosition=pb.STOP_TIMESTAMP, stopTimestamp=1_050_000_000), Stop(5)),
        (pb.SubscribeRequest(stopPosition=pb.STOP_TIMESTAMP, stopTimestamp=1_049_999_999), Stop(4)),
        # after every record: the newest committed one now (Liftbridge's, not a moving end)
        (
            pb.SubscribeRequest(stopPosition=pb.STOP_TIMESTAMP, stopTimestamp=9_000_000_000),
            Stop(19),
        ),
    ],
)
async def test_every_stop_position(request_: pb.SubscribeRequest, stop: Stop) -> None:
    assert await stop_position(FakeReads(), request_) == stop


async def test_stop_latest_on_an_empty_partition_is_behind_any_start() -> None:
    empty = FakeReads(log=FakeLog(high_watermark=0, log_start_offset=0))
    stop = await stop_position(empty, pb.SubscribeRequest(stopPosition=pb.STOP_LATEST))
    assert stop.passed(0)


async def test_bad_positions_are_refused() -> None:
    reads = FakeReads()
    with pytest.raises(InvalidRequestError, match="startOffset"):
        await start_offset(reads, pb.SubscribeRequest(startPosition=pb.OFFSET, startOffset=-1))
    with pytest.raises(InvalidRequestError, match="startPosition"):
        await start_offset(reads, pb.SubscribeRequest(startPosition=9))  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError, match="stopPosition"):
        await stop_position(reads, pb.SubscribeRequest(stopPosition=9))  # type: ignore[arg-type]
