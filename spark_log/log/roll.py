"""When the active segment is sealed and a new one started (Kafka's ``shouldRoll``)."""

from __future__ import annotations

from spark_log.log.batch import BatchHeader
from spark_log.log.sparse_index import UINT32_MAX

MAX_SEGMENT_FILE_BYTES = UINT32_MAX
"""Index positions are uint32, so no segment file may grow past this, whatever the config."""


def should_roll(
    *,
    segment_base: int,
    segment_size: int,
    rolling_timestamp_ms: int | None,
    header: BatchHeader,
    segment_bytes: int,
    segment_ms: int,
) -> bool:
    """True when ``header``'s batch must go to a new segment.

    An empty segment never rolls (a batch larger than ``segment_bytes`` gets a segment of its
    own). Age is measured as in Kafka: the incoming batch's max timestamp minus the max
    timestamp of the segment's first batch, so a follower copying old data does not roll on
    every batch and an idle segment is not sealed empty-handed.
    """
    if segment_size == 0:
        return False
    new_size = segment_size + header.size
    if new_size > segment_bytes or new_size > MAX_SEGMENT_FILE_BYTES:
        return True
    if header.last_offset - segment_base > UINT32_MAX:
        return True
    return (
        rolling_timestamp_ms is not None
        and header.max_timestamp_ms - rolling_timestamp_ms > segment_ms
    )
