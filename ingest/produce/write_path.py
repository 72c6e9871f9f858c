"""The partition leader's write path: NATS intake, the writer, group commit, acks, purgatory.

Kafka splits produce handling the same way: requests queue up, one writer per partition
appends them (``ingest.produce.sequencer.Sequencer`` assigns offsets, refusing ``acks=all``
before the append while |ISR| < min ISR), a flusher fsyncs what the writer appended while the writer
already takes the next cycle (group commit), and ``acks=all`` requests wait in the produce
purgatory until the HW passes them. Acks are queued in an outbox and published in order by the
writer or the flusher, never one task per ack.

Everything this path cannot decide alone (the HW, going offline, telling followers and the
exporter that data arrived, idle-time maintenance) goes through ``WriteHooks``, which the
replica implements; the resume of an idle-paused partition is handed in as a callable.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from ingest.clock import Clock
from ingest.histogram import HistogramChild
from ingest.metrics import NodeMetrics
from ingest.produce.ack_router import AckRouter
from ingest.produce.dedup import DedupWindow
from ingest.produce.envelope_acks import NS_PER_MS, EnvelopeAck, encode_envelope_error
from ingest.produce.envelope_intake import open_envelope, request_from_envelope
from ingest.produce.nats_frames import InboundMessage
from ingest.produce.request import ProduceAck, ProduceRequest, request_from_nats
from ingest.produce.sequencer import CycleResult, Sequenced, Sequencer, next_cycle
from ingest.produce.value_check import ValueChecker
from ingest.replication.partition_state import Partition
from spark_log.api_models import Ack, DeadLetter
from spark_log.config import IngestConfig
from spark_log.crypto import ValueCipher
from spark_log.errors import (
    KeyUnavailableError,
    LiftlogError,
    SchemaViolationError,
    StorageError,
    StreamPausedError,
    UnavailableError,
)
from spark_log.fetch_wire import is_internal_reply
from spark_log.liftbridge.envelope import MAGIC, EnvelopeError
from spark_log.log import PartitionLog, decode_header
from spark_log.stream_spec import StreamSpec
from spark_log.value_schema import ValueSchema
from spark_log.wire import (
    HEADER_PRINCIPAL,
    ack_prefix,
    encode_ack,
    encode_duplicate_ack,
    encode_error,
)

log = logging.getLogger("liftlog.write_path")

MAGIC_FIRST_BYTE = MAGIC[0]
PRINCIPAL_VERDICT_TTL_S = 1.0
MAX_PRINCIPAL_VERDICTS = 1024

DeadLetterAnswer = Callable[[ProduceRequest, "DeadLetter | LiftlogError"], None]
DeadLetterSink = Callable[
    [StreamSpec, int, ProduceRequest, SchemaViolationError, DeadLetterAnswer], None
]
"""Stores (stream spec, partition, request, violation) in the dead letter stream, in the
background, then answers through the callable it is given."""

AckSender = Callable[[str, bytes], None]
"""Queues a message on NATS (the intake writes everything queued in a loop turn at once)."""
IDLE_WAKEUP_S = 0.2
"""How long the writer waits for work before it runs idle-time maintenance anyway."""
UNCOMMITTED_CYCLES_TIMED = 10_000
"""Appended cycles whose commit is timed at most (a HW held for long forgets the oldest)."""


@runtime_checkable
class WriteHooks(Protocol):
    """What the write path asks of its replica."""

    @property
    def log(self) -> PartitionLog: ...

    def advance_high_watermark(self) -> None: ...

    def go_offline(self, reason: str, cause: BaseException | None = None) -> None:
        """Refuse writes; ``cause`` (a full disk) may make it a stall that retries itself."""
        ...

    def on_appended(self, batches: list[bytes]) -> None:
        """The batches are in the log (called on the loop): waiting followers may fetch."""
        ...

    def on_cycle_written(self, start: int, end: int, size_bytes: int) -> None:
        """A cycle's records ``[start, end)`` are appended (the exporter tracks them)."""
        ...

    def on_flushed(self, now_ms: int) -> None:
        """The flusher's fsync made the appended records durable: the HW may advance."""
        ...

    async def run_maintenance(self) -> None: ...


class LeaderWritePath:
    """Intake, writer task, group-commit flusher, ack outbox and produce purgatory."""

    def __init__(
        self,
        *,
        spec: StreamSpec,
        partition: Partition,
        ingest: IngestConfig,
        fsync_always: bool,
        metrics: NodeMetrics,
        publish: AckSender,
        clock: Clock,
        hooks: WriteHooks,
        write_lock: asyncio.Lock,
        resume_idle: Callable[[], Awaitable[None]],
    ) -> None:
        """``resume_idle`` resumes a partition paused for idleness (StreamPausedError if it
        cannot be)."""
        self._spec = spec
        self._partition = partition
        self._limits = ingest
        self._fsync_always = fsync_always
        self._metrics = metrics
        self._labels = (spec.name, str(partition.partition))
        self._records_in = metrics.records_in.labels(*self._labels)
        self._bytes_in = metrics.bytes_in.labels(*self._labels)
        self._duplicates = metrics.duplicates.labels(*self._labels)
        self._paused_drops = metrics.paused_drops.labels(*self._labels)
        self._readonly_drops = metrics.readonly_drops.labels(*self._labels)
        self._internal_reply_drops = metrics.internal_reply_drops.labels(*self._labels)
        self._envelope_drops = metrics.envelope_drops.labels(*self._labels)
        self._dead_lettered = metrics.dead_lettered.labels(*self._labels)
        self._ack_latency: dict[str, HistogramChild] = {}
        self._log_flush = metrics.log_flush.labels(spec.name)
        self._commit_latency = metrics.commit_latency.labels(spec.name)
        # (end offset, append time) of each cycle the HW has not passed yet
        self._uncommitted: deque[tuple[int, float]] = deque(maxlen=UNCOMMITTED_CYCLES_TIMED)
        self._inline_fsync_s = 0.0
        self._publish = publish
        self._clock = clock
        self._hooks = hooks
        self._write_lock = write_lock
        self._resume_idle = resume_idle
        self.recorded_elsewhere: Callable[[str], bool] | None = None
        """Whether an active stream other than this one records a subject (set by the
        replica manager, which knows every stream; None: this stream alone)."""
        self.publisher_refusal: Callable[[str], LiftlogError | None] | None = None
        """Why the principal a message names (``Liftlog-Principal``) may not publish here,
        or None (set by the replica manager when NATS logins are Liftlog tokens)."""
        self.value_checker: ValueChecker | None = None
        """The check of a typed stream's values against the schema registry (set by the
        replica manager; asked only while the spec binds a value schema)."""
        self.dead_letters: DeadLetterSink | None = None
        """Stores a record that failed that check in the binding's dead letter stream (set
        by the node; None: such records are refused)."""
        self._verdicts: dict[str, tuple[float, LiftlogError | None]] = {}
        self._queue: list[ProduceRequest] = []
        self._queued_bytes = 0
        self._wakeup = asyncio.Event()
        self._flush_wanted = asyncio.Event()
        self._flushing = False
        self._stop_requested = asyncio.Event()  # set by stop(), read after every await
        self._outbox: list[tuple[str, bytes]] = []
        self._writer: asyncio.Task[None] | None = None
        self._flusher: asyncio.Task[None] | None = None
        dedup = DedupWindow(int(ingest.dedup_window_s * 1000), ingest.dedup_max_ids)
        self._acks = AckRouter(
            ack_prefix(spec.name, partition.partition),
            self._queue_ack,
            encode_ack,
            self._encode_error,
            encode_duplicate_ack,
            answered=self._observe_ack,
            now_ns=self._now_ns,
        )
        self._sequencer = Sequencer(
            spec, dedup, self._refuse, max_timestamp_skew_ms=ingest.max_timestamp_skew_ms
        )

    # ----------------------------------------------------------------- lifecycle

    def start(self, name: str) -> None:
        self._writer = asyncio.create_task(self._run_writer(), name=f"writer-{name}")
        self._flusher = asyncio.create_task(self._run_flusher(), name=f"flusher-{name}")

    async def stop(self) -> None:
        """Let the writer and flusher finish the step they are in (never cancel a task in
        the middle of an executor append: the thread would go on writing after close)."""
        self._stop_requested.set()
        self._wakeup.set()
        self._flush_wanted.set()
        tasks = [t for t in (self._writer, self._flusher) if t is not None]
        self._writer = self._flusher = None
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    @property
    def cipher(self) -> ValueCipher | None:
        return self._sequencer.cipher

    @cipher.setter
    def cipher(self, cipher: ValueCipher | None) -> None:
        """The partition's value cipher (an encrypted stream whose data key was unwrapped)."""
        self._sequencer.cipher = cipher

    @property
    def dedup(self) -> DedupWindow:
        """The deduplication window (the sequencer owns it: it checks and records ids)."""
        return self._sequencer.dedup

    def replace_dedup(self, window: DedupWindow) -> None:
        """Adopt a window rebuilt from the log (a new leadership)."""
        self._sequencer.dedup = window

    # ----------------------------------------------------------------- intake

    def on_messages(self, messages: list[InboundMessage]) -> int:
        """NATS intake, one socket read's messages at a time: queue only (the writer task
        sequences and validates). A paused or read-only stream answers at once and stores
        nothing. A payload in Liftbridge's envelope takes its own way in: its magic number's
        first byte never starts UTF-8 text, so a text or JSON payload pays one byte comparison
        for it. Returns how many messages found the queue full (the subscription counts them
        as a slow consumer's drops)."""
        received_s = self._clock.monotonic_s()
        inactive = self._partition.paused or self._partition.read_only
        limits, spec, dropped, magic = self._limits, self._spec, 0, MAGIC
        for msg in messages:
            reply, data = msg.reply, msg.data
            if reply and is_internal_reply(reply):
                self._drop_internal_reply(msg.subject, reply)
            elif data and data[0] == MAGIC_FIRST_BYTE and data[:4] == magic:
                dropped += self._take_envelope(msg, inactive, received_s)
            elif inactive:
                self._refuse_inactive(msg.subject, reply)
            elif msg.headers and (refusal := self._publisher_refusal(msg.headers)):
                self._refuse_reply(reply, refusal)
            elif (
                len(self._queue) >= limits.pending_msgs_limit
                or self._queued_bytes >= limits.pending_bytes_limit
            ):
                dropped += 1
            else:
                try:
                    req = request_from_nats(msg.subject, reply, data, msg.headers, spec)
                except LiftlogError as exc:
                    self._refuse_reply(reply, exc)
                    continue
                self._enqueue(req, received_s)
        return dropped

    def _take_envelope(self, msg: InboundMessage, inactive: bool, received_s: float) -> int:
        """A Liftbridge enveloped publish: decoded whole (a corrupt one is refused and stored
        nowhere), then judged as a plain message is, but answered on its ack inbox in
        Liftbridge's shape. Returns 1 if it found the queue full, else 0."""
        reply = msg.reply or None
        try:
            enveloped = open_envelope(
                msg.subject, msg.data, self._spec, self._partition.partition, self._now_ns()
            )
        except EnvelopeError as exc:
            self._refuse_corrupt(msg.subject, reply, exc)
            return 0
        answer = enveloped.answer
        if answer is not None and is_internal_reply(answer.ack_inbox):
            self._drop_internal_reply(msg.subject, answer.ack_inbox)
        elif inactive:
            self._refuse_inactive(msg.subject, reply, answer)
        elif msg.headers and (refusal := self._publisher_refusal(msg.headers)):
            self._refuse_to(answer, reply, refusal)
        elif (
            len(self._queue) >= self._limits.pending_msgs_limit
            or self._queued_bytes >= self._limits.pending_bytes_limit
        ):
            return 1
        else:
            try:
                req = request_from_envelope(msg.subject, reply, enveloped, self._spec)
            except LiftlogError as exc:
                self._refuse_to(answer, reply, exc)
                return 0
            self._enqueue(req, received_s)
        return 0

    def _refuse_corrupt(self, subject: str, reply: str | None, exc: EnvelopeError) -> None:
        """A corrupt envelope: the JSON error on its reply subject (its ack inbox, if any,
        cannot be trusted), or, with nobody to tell, a counted drop."""
        if reply:
            self._refuse_reply(reply, exc)
            return
        self._envelope_drops.inc()
        log.debug("dropped a corrupt Liftbridge envelope on %s: %s", subject, exc.message)

    def _publisher_refusal(self, headers: dict[str, str]) -> LiftlogError | None:
        """The verdict on the principal a message names, judged at most once a second per
        principal: the ACLs are not read again for every message of a busy publisher."""
        check, principal = self.publisher_refusal, headers.get(HEADER_PRINCIPAL)
        if check is None or principal is None:
            return None
        now = self._clock.monotonic_s()
        known = self._verdicts.get(principal)
        if known is not None and now - known[0] < PRINCIPAL_VERDICT_TTL_S:
            return known[1]
        if len(self._verdicts) >= MAX_PRINCIPAL_VERDICTS:
            self._verdicts.clear()
        verdict = check(principal)
        self._verdicts[principal] = (now, verdict)
        return verdict

    def _enqueue(self, req: ProduceRequest, received_s: float) -> None:
        req.received_s = received_s
        self._queue.append(req)
        self._queued_bytes += req.size_bytes
        self._wakeup.set()

    def _refuse_inactive(
        self, subject: str, reply: str | None, answer: EnvelopeAck | None = None
    ) -> None:
        if self._partition.paused:
            self._answer_paused(subject, reply, answer)
        else:
            self._answer_read_only(subject, reply, answer)

    def _drop_internal_reply(self, subject: str, reply: str) -> None:
        """A message naming a reply subject in Liftlog's namespace or the server's is dropped
        unstored and unanswered. The ack would be published by the node under its own
        identity, so a publisher could use it to put messages on the replication wire (or a
        server API) that it may not publish itself. No legitimate publisher names such a
        reply (its replies go to its own inbox), so the message is refused as a whole rather
        than stored without its ack: a record whose producer can never learn its offset is
        no use to it, and a publish that tries to misuse the node is refused whole rather
        than half served."""
        self._internal_reply_drops.inc()
        log.debug("dropped a message on %s naming internal reply subject %s", subject, reply)

    def _answer_paused(
        self, subject: str, reply: str | None, answer: EnvelopeAck | None = None
    ) -> None:
        """A publish to a paused stream: the typed error ack on its reply subject (an
        enveloped one's on its ack inbox), or, with nobody to tell, a counted drop. When an
        active stream also records the subject, that stream's ack is the answer: a publisher
        takes the first reply, and a refusal racing ahead of it would report a stored record
        as refused."""
        if not (reply or answer) or self._recorded_by_another_stream(subject):
            self._paused_drops.inc()
            return
        self._refuse_to(answer, reply, StreamPausedError(f"stream {self._spec.name} is paused"))

    def _answer_read_only(
        self, subject: str, reply: str | None, answer: EnvelopeAck | None = None
    ) -> None:
        """A publish to a read-only stream: answered as a paused one (``_answer_paused``),
        with ``stream_readonly``; a drop without a reply is counted apart."""
        if not (reply or answer) or self._recorded_by_another_stream(subject):
            self._readonly_drops.inc()
            return
        self._refuse_to(answer, reply, self._partition.read_only_error())

    def _recorded_by_another_stream(self, subject: str) -> bool:
        check = self.recorded_elsewhere
        return check is not None and check(subject)

    def adopt_spec(self, spec: StreamSpec) -> None:
        """An altered spec (max record size, default ack policy) applies from the next
        message on; requests already queued keep what they were parsed with."""
        self._spec = spec
        self._sequencer.spec = spec

    async def produce(self, requests: list[ProduceRequest]) -> list[ProduceAck]:
        """Queue requests that did not come from NATS (REST) and wait for their acks."""
        loop = asyncio.get_running_loop()
        received_s = self._clock.monotonic_s()
        for req in requests:
            req.future = loop.create_future()
            self._enqueue(req, received_s)
        return [await req.future for req in requests if req.future is not None]

    # ----------------------------------------------------------------- acks

    def _encode_error(self, exc: LiftlogError) -> bytes:
        return encode_error(exc, self._spec.name, self._partition.partition)

    def _refuse(self, req: ProduceRequest, exc: LiftlogError) -> None:
        self._metrics.produce_errors.labels(*self._labels, exc.code).inc()
        self._acks.error(req, exc)

    def _refuse_to(self, answer: EnvelopeAck | None, reply: str | None, exc: LiftlogError) -> None:
        """Refuse a message before it is queued: an enveloped ``Ack`` with its error on the
        ack inbox of an enveloped publish that has one, else the JSON error on ``reply``."""
        if answer is None:
            self._refuse_reply(reply, exc)
            return
        self._metrics.produce_errors.labels(*self._labels, exc.code).inc()
        self._queue_ack(answer.ack_inbox, encode_envelope_error(answer, exc, self._now_ns()))
        self._wakeup.set()

    def _now_ns(self) -> int:
        """The clock's wall time in Unix nanoseconds (an enveloped ack's timestamps)."""
        return self._clock.now_ms() * NS_PER_MS

    def _refuse_reply(self, reply: str | None, exc: LiftlogError) -> None:
        self._metrics.produce_errors.labels(*self._labels, exc.code).inc()
        if reply:
            self._queue_ack(reply, self._encode_error(exc))
            self._wakeup.set()

    def _queue_ack(self, subject: str, payload: bytes) -> None:
        self._outbox.append((subject, payload))

    def _observe_ack(self, req: ProduceRequest) -> None:
        """The request was answered: its ack latency, by ack policy."""
        child = self._ack_latency.get(req.ack_policy)
        if child is None:
            child = self._metrics.ack_latency.labels(self._spec.name, req.ack_policy)
            self._ack_latency[req.ack_policy] = child
        child.observe(self._clock.monotonic_s() - req.received_s)

    def send_acks(self) -> None:
        """Publish queued acks in order (called wherever the HW may have moved)."""
        outbox, self._outbox = self._outbox, []
        publish = self._publish
        for subject, payload in outbox:
            publish(subject, payload)

    def release(self, high_watermark: int) -> int:
        """Complete the parked acks=all requests the HW now passes."""
        self._observe_commits(high_watermark)
        return self._acks.purgatory.release(high_watermark)

    def _observe_commits(self, high_watermark: int) -> None:
        """Each cycle the HW now passes: how long it took from its append to commit."""
        uncommitted = self._uncommitted
        if not uncommitted:
            return
        now = self._clock.monotonic_s()
        while uncommitted and uncommitted[0][0] <= high_watermark:
            self._commit_latency.observe(now - uncommitted.popleft()[1])

    def fail_parked(self, exc: LiftlogError) -> None:
        """Fail the requests parked in the purgatory (the leader was fenced)."""
        self._acks.purgatory.fail_all(exc)

    def fail_waiting(self, exc: LiftlogError) -> None:
        """Fail everything parked or queued (leadership lost, offline, closing)."""
        self._uncommitted.clear()
        self._acks.purgatory.fail_all(exc)
        queued, self._queue = self._queue, []
        self._queued_bytes = 0
        for req in queued:
            self._acks.error(req, exc)

    # ----------------------------------------------------------------- writer

    async def _run_writer(self) -> None:
        limits = self._limits
        while not self._stop_requested.is_set():
            items = await next_cycle(
                self._queue,
                self._wakeup,
                IDLE_WAKEUP_S,
                limits.max_batch_records,
                limits.max_batch_bytes,
            )
            if items:
                self._queued_bytes -= sum(req.size_bytes for req in items)
                await self._write_cycle(items)
            self.send_acks()
            await self._hooks.run_maintenance()

    async def _write_cycle(self, items: list[ProduceRequest]) -> None:
        """Sequence, encode and append one cycle; with fsync=always the flusher commits it."""
        refusal = await self._idle_refusal()
        refusal = refusal or self._partition.write_refusal() or self._encryption_refusal()
        if refusal is not None:
            for req in items:
                self._refuse(req, refusal)
            return
        binding = self._spec.value_schema
        if binding is not None:
            items = await self._valid_values(binding, items)
            if not items:
                return
        async with self._write_lock:
            await self._write_cycle_locked(items)

    async def _valid_values(
        self, binding: ValueSchema, items: list[ProduceRequest]
    ) -> list[ProduceRequest]:
        """The requests whose values match the stream's schema; the others are answered
        ``schema_violation`` (or the registry's error) and nothing of them is stored."""
        checker = self.value_checker
        if checker is None:
            refusal = UnavailableError("this node cannot check values against the registry")
            for req in items:
                self._refuse(req, refusal)
            return []
        await checker.prepare(binding, items)
        valid: list[ProduceRequest] = []
        for req in items:
            violation = checker.violation(binding, req)
            if violation is None:
                valid.append(req)
            elif self._dead_letterable(binding, req, violation):
                self._dead_letter(req, violation)
            else:
                self._refuse(req, violation)
        return valid

    def _dead_letterable(
        self, binding: ValueSchema, req: ProduceRequest, violation: LiftlogError
    ) -> bool:
        """A single record (not a producer batch nor a Liftbridge envelope, which are
        refused whole) that does not match the schema, on a stream that asks for it."""
        return (
            binding.on_invalid == "dead_letter"
            and self.dead_letters is not None
            and isinstance(violation, SchemaViolationError)
            and req.records is None
            and req.envelope is None
        )

    def _dead_letter(self, req: ProduceRequest, violation: LiftlogError) -> None:
        sink = self.dead_letters
        if sink is not None and isinstance(violation, SchemaViolationError):
            self._dead_lettered.inc()
            sink(self._spec, self._partition.partition, req, violation, self._answer_dead_letter)

    def _answer_dead_letter(self, req: ProduceRequest, outcome: DeadLetter | LiftlogError) -> None:
        """Answer a record sent to the dead letter stream once that stream stored it (or
        refused it: then the publisher gets that error, and nothing was stored)."""
        if isinstance(outcome, LiftlogError):
            self._refuse(req, outcome)
        elif req.future is not None:
            if not req.future.done():
                req.future.set_result(ProduceAck(-1, 1, dead_letter=outcome))
        elif req.reply is not None:
            ack = Ack(self._spec.name, self._partition.partition, -1, dead_letter=outcome)
            self._queue_ack(req.reply, json.dumps(ack.to_json(), separators=(",", ":")).encode())
        self._wakeup.set()

    async def _idle_refusal(self) -> LiftlogError | None:
        """A partition paused for idleness holds the cycle (and, through back-pressure,
        further publishes) until it is resumed; refused if the resume fails or times out."""
        if not self._partition.idle_paused:
            return None
        try:
            await self._resume_idle()
        except StreamPausedError as exc:
            return exc
        return None

    def _encryption_refusal(self) -> LiftlogError | None:
        """An encrypted stream whose data key this node could not unwrap stores nothing: a
        value must never reach the log in clear."""
        if self._spec.encryption and self._sequencer.cipher is None:
            return KeyUnavailableError(
                f"stream {self._spec.name} is encrypted and this node has no data key for "
                f"partition {self._partition.partition} (is its master key configured?)"
            )
        return None

    async def _write_cycle_locked(self, items: list[ProduceRequest]) -> None:
        log_ = self._hooks.log
        start = log_.log_end_offset
        # min ISR is read here and nowhere else before the append, with no await until the
        # cycle is sequenced: a request is either refused (nothing stored) or appended
        cycle = self._sequencer.sequence(
            items,
            start,
            self._partition.leader_epoch,
            self._clock.now_ms(),
            isr_ok=self._partition.isr_ok,
        )
        sync = self._fsync_always
        # idle flusher (light load): append and fsync in one thread hop, for latency;
        # busy flusher (heavy load): append only and let the flusher's next fsync cover it
        inline_fsync = sync and not self._flushing and not self._flush_wanted.is_set()
        if cycle.batches and not await self._append(log_, cycle, start, inline_fsync):
            return
        self._route_appended(
            cycle.sequenced, cycle.batches, start, cycle.end_offset, not sync or inline_fsync
        )

    def _route_appended(
        self,
        sequenced: list[Sequenced],
        batches: list[bytes],
        start: int,
        end: int,
        durable: bool,
    ) -> None:
        """Acknowledge, park or refuse requests whose records are in the log ``[start, end)``
        (``durable``: per the fsync policy already, so the HW may move before the acks;
        otherwise the flusher's fsync commits them)."""
        if durable:
            self._hooks.advance_high_watermark()
        hw = self._hooks.log.high_watermark
        self._acks.after_append(sequenced, end, hw, self._partition.isr_ok)
        if batches:
            self._uncommitted.append((end, self._clock.monotonic_s()))
            size = self._count(batches, end - start)
            self._hooks.on_cycle_written(start, end, size)
            if not durable:
                self._flush_wanted.set()
        duplicates = sum(1 for item in sequenced if item.duplicate)
        if duplicates:
            self._duplicates.inc(duplicates)

    async def _append(
        self, log_: PartitionLog, cycle: CycleResult, start: int, inline_fsync: bool
    ) -> bool:
        """Append the cycle's batches (and fsync them, with ``inline_fsync``) in the
        executor. False if either failed: the replica is offline or stalled then, and every
        request of the cycle has been answered here."""
        loop = asyncio.get_running_loop()
        try:
            fsync_error = await loop.run_in_executor(
                None, self._append_cycle, loop, log_, cycle.batches, inline_fsync
            )
        except (OSError, LiftlogError) as exc:
            self._append_failed(log_, cycle, start, exc)
            return False
        if fsync_error is not None:
            self._fsync_failed(cycle.sequenced, fsync_error)
            return False
        if inline_fsync:
            self._log_flush.observe(self._inline_fsync_s)
        return True

    def _append_cycle(
        self,
        loop: asyncio.AbstractEventLoop,
        log_: PartitionLog,
        batches: list[bytes],
        fsync: bool,
    ) -> OSError | LiftlogError | None:
        """Worker thread: append batches this leader just encoded (its own CRCs, so not
        verified again), let waiting followers fetch them at once, then fsync if asked: the
        followers' round trip overlaps the leader's fsync, as in Kafka. An append failure is
        raised; an fsync failure is returned, since it must never be taken for a full disk."""
        log_.append_many(batches, verify_crc=False)
        loop.call_soon_threadsafe(self._hooks.on_appended, batches)
        if fsync:
            try:
                # read by the loop once this call returns (the writer awaits it before the next)
                self._inline_fsync_s = _timed_flush(log_)
            except (OSError, LiftlogError) as exc:
                return exc
        return None

    def _append_failed(
        self, log_: PartitionLog, cycle: CycleResult, start: int, exc: OSError | LiftlogError
    ) -> None:
        """An append that failed part-way (a roll between two batches) leaves the earlier
        batches in the log, and they replicate and commit like any other: requests wholly
        below the LEO are routed as appended (``leader`` acked, ``all`` parked, ...); only
        the rest are refused with ``storage_error`` and have their msg ids forgotten, so a
        retry stores them (with or without an id) exactly once."""
        stored_end = log_.log_end_offset
        stored_batches = [b for b in cycle.batches if decode_header(b).next_offset <= stored_end]
        if stored_batches:
            self._hooks.on_appended(stored_batches)
        self._hooks.go_offline(f"log append failed: {exc}", exc)
        stored = [i for i in cycle.sequenced if i.offset + i.count <= stored_end]
        lost = [i for i in cycle.sequenced if i.offset + i.count > stored_end]
        first_lost = min((i.offset for i in lost if not i.duplicate), default=None)
        if first_lost is not None:
            self.dedup.forget_from(first_lost)
        for item in lost:
            self._acks.error(item.request, StorageError(str(exc)))
        self._route_appended(stored, stored_batches, start, stored_end, not self._fsync_always)

    def _fsync_failed(self, sequenced: list[Sequenced], exc: OSError | LiftlogError) -> None:
        """The cycle is in the log but its fsync failed: offline for good (never a stall,
        whatever the errno: the kernel may have dropped the pages), nothing acknowledged."""
        self._hooks.go_offline(f"log fsync failed: {exc}")
        for item in sequenced:
            self._acks.error(item.request, StorageError(str(exc)))

    def _count(self, batches: list[bytes], records: int) -> int:
        """Count what was appended in the metrics; returns its size in bytes."""
        size = sum(len(b) for b in batches)
        if batches:
            self._records_in.inc(records)
            self._bytes_in.inc(size)
        return size

    # ----------------------------------------------------------------- flusher

    async def _run_flusher(self) -> None:
        """Group commit, pipelined: fsync whatever the writer appended since the last fsync,
        then advance the HW and release acks=all, while the writer appends the next cycle."""
        loop = asyncio.get_running_loop()
        while not self._stop_requested.is_set():
            await self._flush_wanted.wait()
            self._flush_wanted.clear()
            if self._stop_requested.is_set():
                return  # close() flushes
            self._flushing = True
            try:
                self._log_flush.observe(
                    await loop.run_in_executor(None, _timed_flush, self._hooks.log)
                )
            except (OSError, LiftlogError) as exc:
                self._hooks.go_offline(f"log fsync failed: {exc}")
                self.send_acks()
                return
            finally:
                self._flushing = False
            self._hooks.on_flushed(self._clock.now_ms())
            self.send_acks()


def _timed_flush(log_: PartitionLog) -> float:
    """Worker thread: fsync the log; how long it took (observed back on the loop)."""
    started = time.perf_counter()
    log_.flush()
    return time.perf_counter() - started
