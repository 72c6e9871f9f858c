"""The follower's side of replication: truncate by leader epoch, then fetch and append.

On becoming a follower the replica asks the leader for the end offset of its own latest epoch
and truncates to it (KIP-101/279), asking again about its then-latest epoch while the leader
answers with an epoch it does not hold (``truncation_step``), never merely to its HW: a
divergent tail from an old leadership is cut exactly where the logs part. It then long-polls
the leader from its LEO, appends the leader's bytes unchanged and takes the HW the leader
reports (capped by its LEO).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import nats.errors
from nats.aio.client import Client as NatsClient

from ingest.replication.throttle import ReplicationThrottle
from spark_log.errors import InvalidRequestError, LiftlogError
from spark_log.fetch_wire import (
    HEADER_FETCH_META,
    OFFSET_OUT_OF_RANGE,
    EpochRequest,
    EpochResponse,
    FetchMeta,
    FetchRequest,
    epoch_subject,
    fetch_subject,
)
from spark_log.log import PartitionLog

log = logging.getLogger("liftlog.fetcher")

FETCH_WAIT_MS = 500
FETCH_MAX_BYTES = 4 * 1024 * 1024
REQUEST_TIMEOUT_S = 5.0
# A fetch answer is due FETCH_WAIT_MS after the request at the latest, plus the leader's read
# and the transfer; this much more is allowed before the fetch counts as lost (see
# fetch_timeout_s).
FETCH_RESPONSE_GRACE_S = 1.0
RETRY_BACKOFF_S = 0.2
# every this many failed fetches in a row is logged as a warning (the others at debug)
FAILURES_WORTH_A_WARNING = 5


def fetch_timeout_s(wait_ms: int = FETCH_WAIT_MS) -> float:
    """How long a follower waits for the answer to a fetch that may be parked ``wait_ms``.

    NATS does not tell a requester that its request or the answer was lost: when the NATS
    server the leader's node is attached to dies, a fetch in flight through it is simply
    gone, and the follower notices only when this timeout ends. Meanwhile the leader cannot
    advance its HW, so every acks=all publish waits as long. The leader answers within
    ``wait_ms`` plus its read of at most FETCH_MAX_BYTES, so a short grace bounds that stall
    (a fetch that merely took longer is sent again from the same offset, which is harmless).
    """
    return wait_ms / 1000 + FETCH_RESPONSE_GRACE_S


@runtime_checkable
class FollowerReplica(Protocol):
    """What a fetcher needs from the follower replica it feeds."""

    @property
    def broker_id(self) -> int: ...

    @property
    def stream_name(self) -> str: ...

    @property
    def partition(self) -> int: ...

    @property
    def leader_epoch(self) -> int: ...

    @property
    def leader_id(self) -> int: ...

    @property
    def log(self) -> PartitionLog: ...

    @property
    def log_write_in_progress(self) -> bool: ...

    @property
    def active_throttle(self) -> ReplicationThrottle | None:
        """The reassignment throttle while this replica is being added and not in sync."""
        ...

    async def truncate_to(self, offset: int) -> None: ...

    async def append_replicated(self, data: bytes) -> None: ...

    def follow_high_watermark(self, leader_hw: int) -> None: ...

    async def follow_log_start(self, leader_log_start: int) -> None: ...

    @property
    def storage_stalled(self) -> bool:
        """Writes refused because the disk is full (the replica retries by itself)."""
        ...

    def fail_replication(self, reason: str, cause: BaseException | None = None) -> None: ...


class ReplicaFetcher:
    def __init__(
        self,
        replica: FollowerReplica,
        nc: NatsClient,
        cluster: str,
        on_fetched: Callable[[float], None] = lambda seconds: None,
    ) -> None:
        """``on_fetched`` is told the round trip of each fetch that brought records."""
        self._replica = replica
        self._nc = nc
        self._cluster = cluster
        self._on_fetched = on_fetched
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._failed_in_a_row = 0  # fetches that failed since the last that did not
        # set by an out-of-range answer: the leader's log no longer matches ours (see _fetch_once)
        self._divergence_suspected = False
        self.leader_id = replica.leader_id
        self.leader_epoch = replica.leader_epoch

    def start(self) -> None:
        name = f"fetcher-{self._replica.stream_name}-{self._replica.partition}"
        self._task = asyncio.create_task(self._run(), name=name)

    async def stop(self) -> None:
        """Stop now, unless an append or truncation is running: that one finishes first (a
        cancelled executor call would go on writing after the role changed). A fetch waiting
        on a leader that is going away is cancelled rather than waited out."""
        self._stopping = True
        task, self._task = self._task, None
        if task is None:
            return
        if not self._replica.log_write_in_progress:
            task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # our caller is being cancelled too: do not swallow that

    async def _run(self) -> None:
        truncated = False
        while not self._stopping:
            if self._replica.storage_stalled:
                await self._backoff()  # the replica finds space again by itself, then we fetch
                continue
            try:
                if not truncated or self._divergence_suspected:
                    self._divergence_suspected = False
                    truncated = await self._truncate_by_epoch()
                    if not truncated:
                        await self._backoff()  # refused: the leadership is changing
                    continue
                fetched = await self._fetch_once()
                self._failed_in_a_row = 0
                if not fetched:
                    await self._backoff()
            except (nats.errors.Error, OSError, InvalidRequestError) as exc:
                self._note_failure(exc)
                await self._backoff()
            except LiftlogError as exc:
                self._replica.fail_replication(exc.message, exc)
                if not self._replica.storage_stalled:
                    log.error("%s: replication stopped: %s", self._name(), exc.message)
                    return

    def _note_failure(self, exc: BaseException) -> None:
        """One failed fetch is routine (a leader change, a lost request); several in a row
        (a leader slower than fetch_timeout_s, an unreachable one) is what an operator must
        see before the follower drops out of the ISR."""
        self._failed_in_a_row += 1
        level = (
            logging.WARNING
            if self._failed_in_a_row % FAILURES_WORTH_A_WARNING == 0
            else logging.DEBUG
        )
        log.log(
            level,
            "%s: fetch from broker %d failed (%d in a row): %s",
            self._name(),
            self.leader_id,
            self._failed_in_a_row,
            exc,
        )

    async def _backoff(self) -> None:
        if not self._stopping:
            await asyncio.sleep(RETRY_BACKOFF_S)

    def _name(self) -> str:
        return f"{self._replica.stream_name}/{self._replica.partition}"

    async def _truncate_by_epoch(self) -> bool:
        """KIP-279: ask the leader about our latest epoch and truncate, until a step is final.

        A step that is not final removed at least our latest epoch (see ``truncation_step``),
        so the loop ends: at worst when the log is empty. False when the leader refused the
        query (the leadership is changing: the caller retries).
        """
        r = self._replica
        while (latest := r.log.latest_epoch) is not None:
            resp = await self._ask_epoch(latest)
            if resp is None:
                return False
            step = truncation_step(r.log, resp)
            await self._truncate(step, resp)
            if step.final:
                return True
            if r.log.latest_epoch == latest:  # never: the step cut where that epoch starts
                raise InvalidRequestError(f"truncation by epoch made no progress at {latest}")
        return True  # empty log: nothing can diverge

    async def _ask_epoch(self, epoch: int) -> EpochResponse | None:
        """The leader's OffsetsForLeaderEpoch answer for ``epoch``; None if it refused."""
        r = self._replica
        req = EpochRequest(r.broker_id, self.leader_epoch, epoch)
        subject = epoch_subject(self._cluster, r.stream_name, r.partition, self.leader_id)
        msg = await self._nc.request(subject, req.encode(), timeout=REQUEST_TIMEOUT_S)
        resp = EpochResponse.decode(msg.data)
        if resp.error is not None:
            log.info("%s: epoch query refused (%s); retrying", self._name(), resp.message)
            return None
        return resp

    async def _truncate(self, step: TruncationStep, resp: EpochResponse) -> None:
        """Cut the log at ``step.offset``; also when no record goes but an epoch entry does
        (a deposed leader's entry for an epoch it never appended in starts at its LEO)."""
        log_ = self._replica.log
        entries = log_.epoch_entries
        if step.offset >= log_.log_end_offset and not (entries and entries[-1][1] >= step.offset):
            return
        if step.offset < log_.log_end_offset:
            log.warning(
                "%s: truncating divergent tail %d..%d (leader epoch %d ends at %d%s)",
                self._name(),
                step.offset,
                log_.log_end_offset,
                resp.epoch,
                resp.end_offset,
                "" if step.final else "; asking again",
            )
        await self._replica.truncate_to(step.offset)

    async def _fetch_once(self) -> bool:
        r = self._replica
        throttle = r.active_throttle
        max_bytes = (
            FETCH_MAX_BYTES if throttle is None else throttle.max_fetch_bytes(FETCH_MAX_BYTES)
        )
        req = FetchRequest(
            r.broker_id,
            self.leader_epoch,
            r.log.log_end_offset,
            max_bytes,
            FETCH_WAIT_MS,
        )
        subject = fetch_subject(self._cluster, r.stream_name, r.partition, self.leader_id)
        sent_at = throttle.now() if throttle is not None else 0.0
        started = time.perf_counter()
        msg = await self._nc.request(subject, req.encode(), timeout=fetch_timeout_s())
        round_trip_s = time.perf_counter() - started
        meta_text = (msg.headers or {}).get(HEADER_FETCH_META)
        if meta_text is None:
            raise InvalidRequestError("fetch response without metadata")
        meta = FetchMeta.decode(meta_text)
        if meta.error is not None:
            log.info(
                "%s: fetch refused by broker %d: %s %s",
                self._name(),
                self.leader_id,
                meta.error,
                meta.message,
            )
            # Our LEO is past the leader's: a leader that restarted after a crash (a torn
            # last write) and kept its epoch because no election happened. Waiting would let
            # our unacknowledged tail sit below the HW once the leader's log grows past it
            # (divergence); asking about our epoch again truncates it, as Kafka does.
            self._divergence_suspected = meta.error == OFFSET_OUT_OF_RANGE
            return False
        if meta.leader_epoch != self.leader_epoch:
            return False  # an answer from another leadership: ignore it
        if msg.data:
            self._on_fetched(round_trip_s)
            await r.append_replicated(msg.data)
        r.follow_high_watermark(meta.high_watermark)
        await r.follow_log_start(meta.log_start_offset)
        if throttle is not None and msg.data:
            await throttle.pace(len(msg.data), sent_at)
        return True


@dataclass(frozen=True, slots=True)
class TruncationStep:
    """Where to truncate after one leader-epoch answer, and whether to ask again after."""

    offset: int
    final: bool


def truncation_step(log_: PartitionLog, resp: EpochResponse) -> TruncationStep:
    """One KIP-279 step from the leader's answer (largest epoch <= ours, its end offset).

    * We hold records of the answered epoch: both logs agree below the smaller of the two
      ends of that epoch; truncate there, done. This may go below our HW: only when the logs
      really diverge below it, which a clean election never produces (KIP-101).
    * We hold none of it (the leader's epoch lies between two of ours): everything from our
      first epoch above it is divergent; truncate to where that epoch starts and ask again
      about our then-latest epoch (Kafka's intermediate truncation). Truncating to the
      leader's end offset instead would keep our records of a later epoch below it.
    * The leader knows no epoch <= ours (-1, -1): with leaders recording their epoch on
      election this only happens if its log never learnt it (a checkpoint write failed);
      as Kafka does, fall back to our HW, keeping what was committed.
    * Our cache has no answer for it (an epoch above our latest, which a leader never
      answers): as Kafka, the leader's end offset, capped by our LEO. An epoch older than all
      of ours is answered by our cache (with our log start), so it is the first case.
    """
    leo = log_.log_end_offset
    if resp.epoch < 0 or resp.end_offset < 0:
        return TruncationStep(min(log_.high_watermark, leo), final=True)
    own_epoch, own_end = log_.end_offset_for_epoch(resp.epoch)
    if own_end < 0:
        return TruncationStep(min(resp.end_offset, leo), final=True)
    if own_epoch == resp.epoch:
        return TruncationStep(min(resp.end_offset, own_end, leo), final=True)
    return TruncationStep(min(own_end, leo), final=False)
