"""The partition leader's sequencer: a cycle's requests validated and given dense offsets.

One writer task per partition drains everything that arrived since its last cycle
(``next_cycle``) and hands it here: each request is checked (expected offset, timestamp, min
ISR, dedup) and turned into record batches at the next offsets. The write path appends them
as few batches and fsyncs once for the whole cycle (group commit); ``AckRouter`` answers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa

from ingest.produce.dedup import DedupWindow
from ingest.produce.request import ProduceRequest
from spark_log.config import DEFAULT_MAX_TIMESTAMP_SKEW_MS
from spark_log.crypto import ENCRYPTION_OVERHEAD, ValueCipher
from spark_log.errors import (
    ExpectedOffsetMismatchError,
    InvalidTimestampError,
    LiftlogError,
    NotEnoughReplicasError,
    StorageError,
)
from spark_log.log import build_record_batch, encode_batch
from spark_log.stream_spec import StreamSpec
from spark_log.wire import HEADER_BATCH_COUNT, HEADER_MSG_ID, HEADER_TIMESTAMP

log = logging.getLogger("liftlog.leader")

# A stored batch must fit in one NATS message (default max payload 1 MiB) with room to spare.
MAX_STORED_BATCH_BYTES = 512 * 1024


@dataclass(slots=True)
class Sequenced:
    """A request that was given offsets in this cycle (or found to be a duplicate)."""

    request: ProduceRequest
    offset: int
    count: int
    duplicate: bool = False


@dataclass(slots=True)
class CycleResult:
    """What one writer cycle produced: encoded batches and the requests to acknowledge."""

    batches: list[bytes] = field(default_factory=list)
    sequenced: list[Sequenced] = field(default_factory=list)
    end_offset: int = 0


class Sequencer:
    """Assigns offsets to a cycle's requests and encodes them as log batches (pure, no I/O)."""

    def __init__(
        self,
        spec: StreamSpec,
        dedup: DedupWindow,
        on_error: Callable[[ProduceRequest, LiftlogError], None],
        cipher: ValueCipher | None = None,
        max_timestamp_skew_ms: int = DEFAULT_MAX_TIMESTAMP_SKEW_MS,
    ) -> None:
        self.spec = spec
        self.dedup = dedup
        self._on_error = on_error
        self._max_skew_ms = max_timestamp_skew_ms
        self.cipher = cipher
        """The partition's value cipher on an encrypted stream (values are encrypted as the
        batch is encoded, so the log, followers and fetch traffic only ever hold ciphertext)."""

    def sequence(
        self,
        items: list[ProduceRequest],
        next_offset: int,
        leader_epoch: int,
        now: int,
        *,
        isr_ok: bool,
    ) -> CycleResult:
        """Offsets and encoded batches for ``items``; refused requests go to ``on_error``.

        ``isr_ok`` is the leader's |ISR| >= min ISR, read once for the whole cycle right
        before this call: with it False every answered ``acks=all`` request is refused here,
        before it gets an offset, so a refusal never leaves a record behind.
        """
        result = CycleResult(end_offset=next_offset)
        singles = _Columns()
        for req in items:
            try:
                dup = self._check(req, result.end_offset, now, isr_ok)
            except LiftlogError as exc:
                self._on_error(req, exc)
                continue
            if dup is not None:
                result.sequenced.append(dup)
                continue
            if req.records is not None:
                self._flush_singles(singles, result, leader_epoch)
                base = result.end_offset
                growth = ENCRYPTION_OVERHEAD if self.cipher is not None else 0
                for rb in _split(_batch_records(req, now), MAX_STORED_BATCH_BYTES, growth):
                    result.batches.append(encode_batch(base, leader_epoch, rb, self.cipher))
                    base += rb.num_rows
            else:
                if not singles.timestamps:
                    singles.base_offset = result.end_offset
                singles.add(req, now)
            result.sequenced.append(Sequenced(req, result.end_offset, req.count))
            if req.msg_id is not None:
                self.dedup.add(req.msg_id, result.end_offset, req.count, now)
            result.end_offset += req.count
        self._flush_singles(singles, result, leader_epoch)
        return result

    def _check(
        self, req: ProduceRequest, next_offset: int, now: int, isr_ok: bool
    ) -> Sequenced | None:
        """The before-append checks: min ISR first (as Kafka does, so even a duplicate is
        refused while the ISR is too small), then dedup, then the expected offset."""
        if refused_for_min_isr(req, isr_ok):
            raise NotEnoughReplicasError(
                "the in-sync replica set is smaller than min_isr; acks=all refused, nothing stored"
            )
        if req.msg_id is not None:
            entry = self.dedup.lookup(req.msg_id, now)
            if entry is not None:
                return Sequenced(req, entry.offset, entry.count, duplicate=True)
        if req.expected_offset is not None and req.expected_offset != next_offset:
            raise ExpectedOffsetMismatchError(
                f"expected offset {req.expected_offset} but the next offset is {next_offset}"
            )
        self._check_timestamp(req, now)
        return None

    def _check_timestamp(self, req: ProduceRequest, now: int) -> None:
        """A create time must lie within the skew of the leader's clock, checked here (not
        at parse time) against the very clock reading the cycle's append times use."""
        ts = req.timestamp_ms
        if ts is not None and abs(ts - now) > self._max_skew_ms:
            raise InvalidTimestampError(
                f"{HEADER_TIMESTAMP} {ts} is {abs(ts - now)} ms from the leader's clock "
                f"({now}); at most {self._max_skew_ms} ms allowed "
                "(ingest.max_timestamp_skew_ms); nothing stored"
            )

    def _flush_singles(self, singles: _Columns, result: CycleResult, leader_epoch: int) -> None:
        if singles.timestamps:
            rb = build_record_batch(
                singles.timestamps, singles.keys, singles.values, singles.headers, singles.subjects
            )
            result.batches.append(encode_batch(singles.base_offset, leader_epoch, rb, self.cipher))
            singles.clear()


def refused_for_min_isr(req: ProduceRequest, isr_ok: bool) -> bool:
    """Whether ``req`` must be refused before the append because |ISR| < min ISR.

    Only ``acks=all`` requests somebody waits for (a reply subject or a REST future) are: a
    plain publish has no ack to withhold, so it is appended like ``acks=leader`` and is
    committed once the ISR heals, as before the check existed.
    """
    if isr_ok or req.ack_policy != "all":
        return False
    return req.reply is not None or req.future is not None


class _Columns:
    """Column builders for consecutive single-record requests of one cycle."""

    __slots__ = ("base_offset", "headers", "keys", "subjects", "timestamps", "values")

    def __init__(self) -> None:
        self.base_offset = 0
        self.clear()

    def clear(self) -> None:
        self.timestamps: list[int] = []
        self.keys: list[bytes | None] = []
        self.values: list[bytes] = []
        self.headers: list[dict[str, str] | None] = []
        self.subjects: list[str] = []

    def add(self, req: ProduceRequest, now: int) -> None:
        self.timestamps.append(now if req.timestamp_ms is None else req.timestamp_ms)
        self.keys.append(req.key)
        self.values.append(req.value)
        self.headers.append(req.headers)
        self.subjects.append(req.subject)


def _split(batch: pa.RecordBatch, max_bytes: int, growth_per_row: int = 0) -> list[pa.RecordBatch]:
    """Slices of at most ``max_bytes`` of Arrow data (at least one row each), so that every
    stored batch fits in one NATS message when followers fetch it; ``growth_per_row``: what
    encoding adds to each row (an encrypted value's nonce and tag)."""
    nbytes = batch.nbytes + growth_per_row * batch.num_rows
    if nbytes <= max_bytes:
        return [batch]
    rows = max(1, batch.num_rows * max_bytes // nbytes)
    return [batch.slice(start, rows) for start in range(0, batch.num_rows, rows)]


def _batch_records(req: ProduceRequest, now: int) -> pa.RecordBatch:
    """A producer batch as stored records; the batch's ``Nats-Msg-Id`` rides on its first row."""
    table = req.records
    if table is None:
        raise StorageError("internal: _batch_records on a single record")
    n = table.num_rows
    headers = table.column("headers").combine_chunks()
    if req.msg_id is not None:
        first = headers[0].as_py() or []
        first = [*first, {"key": HEADER_MSG_ID, "value": req.msg_id.encode()}]
        first.append({"key": HEADER_BATCH_COUNT, "value": str(n).encode()})
        headers = pa.concat_arrays([pa.array([first], headers.type), headers.slice(1)])
    return pa.RecordBatch.from_arrays(
        [
            pa.repeat(
                pa.scalar(now if req.timestamp_ms is None else req.timestamp_ms, pa.int64()), n
            ),
            table.column("key").combine_chunks(),
            table.column("value").combine_chunks(),
            headers,
            pa.repeat(pa.scalar(req.subject, pa.string()), n),
        ],
        names=["timestamp", "key", "value", "headers", "subject"],
    )


async def next_cycle(
    queue: list[ProduceRequest],
    wakeup: asyncio.Event,
    timeout_s: float,
    max_records: int,
    max_bytes: int,
) -> list[ProduceRequest]:
    """Wait for work (or the idle timeout); take at most ``max_records``/``max_bytes``.

    At least one request is taken when any is queued, so a request larger than the byte
    bound still makes progress.
    """
    if not queue:
        wakeup.clear()
        try:
            await asyncio.wait_for(wakeup.wait(), timeout_s)
        except TimeoutError:
            return []
    taken, records, size = 0, 0, 0
    for req in queue:
        records += req.count
        size += req.size_bytes
        if taken and (records > max_records or size > max_bytes):
            break
        taken += 1
    items = queue[:taken]
    del queue[:taken]
    return items
