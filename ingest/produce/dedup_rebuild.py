"""Rebuilding the ``Nats-Msg-Id`` window from the log: log in, window out.

A new leader (or a restarted one) must refuse the duplicates its predecessor would have
refused. The ids travel in each stored record's headers, so the log alone says which ids the
last window saw; no side file can disagree with it. Blocking (reads the log): run it in the
executor.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ingest.produce.dedup import DedupWindow
from spark_log.log import PartitionLog, decode_records, iter_batches
from spark_log.wire import HEADER_BATCH_COUNT, HEADER_MSG_ID


def rebuild_dedup_window(
    log: PartitionLog, window_ms: int, max_ids: int, now_ms: int, read_bytes: int
) -> DedupWindow:
    """The dedup window as the records of ``[now_ms - window_ms, now_ms]`` in ``log`` define
    it, read ``read_bytes`` at a time."""
    window = DedupWindow(window_ms, max_ids)
    start = log.offset_for_timestamp(now_ms - window_ms)
    if start is None:
        return window
    start = max(start, log.log_start_offset)
    while start < log.log_end_offset:
        data = log.read(start, read_bytes)
        if not data:
            break
        for header, view in iter_batches(data, verify=False):
            learn_ids(window, decode_records(view), header.base_offset)
            start = header.next_offset
    return window


def learn_ids(window: DedupWindow, batch: pa.RecordBatch, base_offset: int) -> None:
    """Add every ``Nats-Msg-Id`` of a stored batch (a producer batch's id rides on its first
    row, with the batch's record count beside it)."""
    headers = batch.column("headers")
    if headers.null_count == len(headers):
        return
    lengths = pc.fill_null(pc.list_value_length(headers), 0).to_numpy(zero_copy_only=False)
    flat = pc.list_flatten(headers)
    keys = flat.field("key").to_pylist()
    values = flat.field("value").to_pylist()
    timestamps = batch.column("timestamp").to_pylist()
    pos = 0
    for row, length in enumerate(lengths):
        pairs = dict(zip(keys[pos : pos + length], values[pos : pos + length], strict=True))
        pos += int(length)
        msg_id = pairs.get(HEADER_MSG_ID)
        if msg_id is not None:
            count = int(pairs.get(HEADER_BATCH_COUNT, b"1"))
            window.add(msg_id.decode(), base_offset + row, count, timestamps[row])
