"""Kafka's ``startingTimestamp``/``endingTimestamp``: the first offset at or after a time.

The leader's time index answers for the log. Only when that answer is the log's first record
can an earlier record (in the lake, below the log start) also qualify, and only then are lake
files searched: those whose timestamp statistics allow a match, cheapest first.
"""

from __future__ import annotations

import pyarrow as pa

from datasource.bounds import PartitionBounds
from datasource.lake_read import lake_offset_for_timestamp
from datasource.lake_view import LakeView
from datasource.offsets import OffsetSpec
from spark_log.client.rest import RestClient
from spark_log.errors import UnavailableError
from spark_log.lake.layout import MICROS_PER_MILLI
from spark_log.wire import ARROW_STREAM_MEDIA_TYPE


def resolve_offset(
    rest: RestClient,
    stream: str,
    bounds: PartitionBounds,
    leader_url: str | None,
    lake: LakeView | None,
    spec: OffsetSpec,
    timestamp_ms: int | None,
) -> int:
    """One partition's offset from a timestamp option when given (it wins, as in Kafka's
    source), else from the offset option."""
    if timestamp_ms is None:
        return bounds.resolve(spec.for_partition(bounds.partition))
    return offset_for_timestamp(rest, stream, bounds, leader_url, lake, timestamp_ms)


def offset_for_timestamp(
    rest: RestClient,
    stream: str,
    bounds: PartitionBounds,
    leader_url: str | None,
    lake: LakeView | None,
    timestamp_ms: int,
) -> int:
    """The first offset whose timestamp is >= ``timestamp_ms``; the HW when none is."""
    found = _log_offset_for_timestamp(rest, stream, bounds.partition, leader_url, timestamp_ms)
    if found > bounds.log_start or lake is None:
        return found
    files = [
        f.path
        for f in lake.files.get(bounds.partition, ())
        if f.min_offset < bounds.log_start
        and (f.max_timestamp_us is None or f.max_timestamp_us >= timestamp_ms * MICROS_PER_MILLI)
    ]
    if not files:
        return found
    in_lake = lake_offset_for_timestamp(
        files, timestamp_ms * MICROS_PER_MILLI, bounds.log_start, lake.storage
    )
    return in_lake if in_lake is not None else found


def _log_offset_for_timestamp(
    rest: RestClient, stream: str, partition: int, leader_url: str | None, timestamp_ms: int
) -> int:
    if leader_url is None:
        raise UnavailableError(f"{stream}/{partition} has no live leader to search by time")
    response = rest.request(
        "GET",
        f"/v1/streams/{stream}/partitions/{partition}/records",
        params={"timestamp": timestamp_ms, "max_records": 1},
        headers={"Accept": ARROW_STREAM_MEDIA_TYPE},
        server=leader_url,
    )
    table = pa.ipc.open_stream(pa.py_buffer(response.body)).read_all()
    if table.num_rows:
        return int(table.column("offset")[0].as_py())
    return int(response.headers["liftlog-high-watermark"])
