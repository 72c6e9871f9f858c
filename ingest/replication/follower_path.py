"""The follower's write path: the leader's bytes appended as they are, its HW followed,
divergent tails truncated (KIP-101/279).

It is what ``ReplicaFetcher`` drives (``ingest.replication.fetcher.FollowerReplica``). It shares the
replica's write lock with the leader's writer, so a role change never interleaves two writers;
what the rest of the replica must learn (the log was cut or changed, it failed) goes back
through ``FollowerHooks``, and a HW move wakes the replica's waiting reads.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from coordinator.znodes import NO_LEADER
from ingest.replication.partition_state import Partition
from ingest.replication.throttle import ReplicationThrottle
from spark_log.log import PartitionLog, iter_batches
from spark_log.stream_spec import is_internal_stream


@runtime_checkable
class FollowerHooks(Protocol):
    """What the follower path tells its replica."""

    def on_truncated(self, offset: int) -> None: ...

    def on_log_changed(self) -> None: ...

    def go_offline(self, reason: str, cause: BaseException | None = None) -> None: ...


@dataclass(frozen=True)
class LeaderReport:
    """The last HW a leader reported to this follower in a fetch response, uncapped.

    Kept because the follower's own HW is capped by its LEO: a lagging follower knows the
    leader had committed more than it holds, which is what an unclean election's dry run
    needs once that leader is gone.
    """

    leader: int
    leader_epoch: int
    high_watermark: int
    at_monotonic_s: float


class FollowerPath:
    """Appends, truncates and takes the HW for a follower replica."""

    def __init__(
        self,
        partition: Partition,
        log_: Callable[[], PartitionLog],
        write_lock: asyncio.Lock,
        fsync_always: bool,
        hooks: FollowerHooks,
        on_high_watermark: Callable[[], None],
    ) -> None:
        """``on_high_watermark`` is told each time the HW moves (reads waiting on it wake)."""
        self._partition = partition
        self._log = log_
        self._write_lock = write_lock
        self._fsync_always = fsync_always
        self._hooks = hooks
        self._on_high_watermark = on_high_watermark
        # Set by the replica manager while a pending reassignment adds this replica.
        self.reassignment_throttle: ReplicationThrottle | None = None
        self._last_leader_report: LeaderReport | None = None
        self._log_start_tried = 0  # the last leader log start follow_log_start acted on

    @property
    def broker_id(self) -> int:
        return self._partition.broker_id

    @property
    def stream_name(self) -> str:
        return self._partition.stream

    @property
    def partition(self) -> int:
        return self._partition.partition

    @property
    def leader_id(self) -> int:
        return self._partition.leader_id

    @property
    def leader_epoch(self) -> int:
        return self._partition.leader_epoch

    @property
    def log(self) -> PartitionLog:
        return self._log()

    @property
    def log_write_in_progress(self) -> bool:
        return self._write_lock.locked()

    @property
    def active_throttle(self) -> ReplicationThrottle | None:
        """Throttled only until it joins the ISR: an in-sync replica must keep up (acks=all
        waits for it)."""
        if self.broker_id in self._partition.isr:
            return None
        return self.reassignment_throttle

    async def append_replicated(self, data: bytes) -> None:
        """Append the leader's batches as they are (CRC verified), durable per the policy."""
        batches = [view for _header, view in iter_batches(data, verify=False)]
        sync = self._fsync_always

        def append(log_: PartitionLog) -> None:
            log_.append_many(batches)  # out of space: the replica stalls (the fetcher waits)
            if sync:
                # a failed fsync raises FsyncError, which is never taken for a full disk
                # (is_out_of_space): the replica goes offline for good, the log refuses writes
                log_.flush()

        async with self._write_lock:
            await asyncio.get_running_loop().run_in_executor(None, append, self._log())
        self._hooks.on_log_changed()

    @property
    def last_leader_report(self) -> LeaderReport | None:
        """The last HW report, only while it describes the partition's last leader.

        Hidden once this replica has entered a role under any later leader epoch other than
        the offline state that follows that leader's death (epoch + 1, ``NO_LEADER``): after
        an unclean election the old leader's figure counts records already lost, and an
        unclean election's dry run must not present it as something still to lose. Epochs
        only grow, so a hidden report never comes back.
        """
        report = self._last_leader_report
        if report is None:
            return None
        current = (self._partition.leader_id, self._partition.leader_epoch)
        if current in ((report.leader, report.leader_epoch), (NO_LEADER, report.leader_epoch + 1)):
            return report
        return None

    def follow_high_watermark(self, leader_hw: int) -> None:
        """Take the leader's HW, capped by this replica's LEO; it never moves back."""
        self._last_leader_report = LeaderReport(
            self.leader_id, self.leader_epoch, leader_hw, time.monotonic()
        )
        log_ = self._log()
        hw = min(leader_hw, log_.log_end_offset)
        if hw > log_.high_watermark:
            log_.set_high_watermark(hw)
            self._on_high_watermark()

    async def follow_log_start(self, leader_log_start: int) -> None:
        """Drop the whole segments below the leader's log start, for internal streams: a
        ``__cursors`` leader compacts by re-appending its live keys and deleting what came
        before (``ingest.groups.cursor_store``), and its followers must shed the same records or
        keep them forever. (User streams keep applying their own retention per replica.)
        Tried once per leader log start, since a follower's segments end elsewhere."""
        if not is_internal_stream(self.stream_name):
            return
        log_ = self._log()
        if leader_log_start <= max(log_.log_start_offset, self._log_start_tried):
            return
        self._log_start_tried = leader_log_start
        loop = asyncio.get_running_loop()
        if await loop.run_in_executor(None, log_.delete_segments_below, leader_log_start):
            self._hooks.on_log_changed()

    async def truncate_to(self, offset: int) -> None:
        """Cut the divergent tail; the leader's last HW report goes with it (it described
        the log before the cut, and the next fetch response brings a fresh one)."""
        self._last_leader_report = None
        async with self._write_lock:
            await asyncio.get_running_loop().run_in_executor(None, self._log().truncate_to, offset)
        self._hooks.on_truncated(offset)
        self._hooks.on_log_changed()

    @property
    def storage_stalled(self) -> bool:
        """Writes refused because the disk is full, until the replica finds space again."""
        return self._partition.storage_stall is not None

    def fail_replication(self, reason: str, cause: BaseException | None = None) -> None:
        """Take the replica offline; a full disk (``cause``) only stalls it until it has
        space again."""
        self._hooks.go_offline(f"replication failed: {reason}", cause)
