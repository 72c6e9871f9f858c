"""The cursors of one ``__cursors`` partition this node leads, at one leader epoch.

The log is the truth: a new leader reads its whole log into a dict before it answers (and
answers ``coordinator_loading`` until its HW covers what it read), and each leadership reads it
again, never reusing what an earlier leadership of the same node kept. Reusing it is how a
cursor can step back: leadership moves away, the other leader takes newer sets, it moves back,
and the stale dict answers (Liftbridge issue #319).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from ingest.groups.write_gate import WriteGate
from ingest.produce.request import local_request
from ingest.replica.committed import await_log_committed
from ingest.replica.replica import PartitionReplica
from spark_log.cursor_record import CursorValue
from spark_log.cursors_config import DEFAULT_CURSORS_SNAPSHOT_MIN_RECORDS, CursorsConfig
from spark_log.log import PartitionLog, records_from_batches

log = logging.getLogger("liftlog.cursors")

LOAD_READ_RECORDS = 10_000
SNAPSHOT_LIVE_FACTOR = 4
"""A snapshot once the log holds 4 records per live key since the last one (and at least
``[cursors] snapshot_min_records``): the log stays within a small multiple of its live size,
and a snapshot costs at most a quarter of what was appended since the last."""


@dataclass(frozen=True)
class CursorEntry:
    """The newest record of one key: its offset in ``__cursors`` and its value (None: a
    tombstone, the key was deleted)."""

    log_offset: int
    value: bytes | None


def load_cursors(log_: PartitionLog, end: int, read_bytes: int) -> dict[bytes, CursorEntry]:
    """Every key's newest record in ``[log start, end)``: blocking, run it in the executor."""
    entries: dict[bytes, CursorEntry] = {}
    offset = log_.log_start_offset
    while offset < end:
        data = log_.read(offset, read_bytes, end)
        records = records_from_batches(data, offset, end, LOAD_READ_RECORDS)
        if not records:
            break
        for record in records:
            if record.key is not None:
                entries[record.key] = CursorEntry(record.offset, record.value or None)
        offset = records[-1].offset + 1
    return entries


class CursorStore:
    """Reads from memory; every write is an acks=all append first, then memory.

    Keys are opaque here: cursors (``spark_log.cursor_record``) and, beside them, whatever
    else a ``__cursors`` partition's leader keeps (a consumer group's membership record)."""

    def __init__(
        self,
        replica: PartitionReplica,
        leader_epoch: int,
        entries: dict[bytes, CursorEntry],
        *,
        appended: int = 0,
        snapshot_min_records: int = DEFAULT_CURSORS_SNAPSHOT_MIN_RECORDS,
    ) -> None:
        self.replica = replica
        self.leader_epoch = leader_epoch
        self._entries = entries
        self._appended = appended  # records in the log since its last snapshot (or start)
        self._snapshot_min_records = snapshot_min_records
        self._gate = WriteGate()

    @property
    def current(self) -> bool:
        """Still this node's leadership of the partition, at the epoch it was loaded in."""
        return self.replica.state.leads_at(self.leader_epoch)

    def get(self, key: bytes) -> CursorValue | None:
        """The cursor stored under ``key`` (None: never set, deleted or unreadable)."""
        data = self.get_raw(key)
        if data is None:
            return None
        try:
            return CursorValue.from_bytes(data)
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("%s: unreadable cursor value (ignored): %s", self.replica.state.name, exc)
            return None

    def get_raw(self, key: bytes) -> bytes | None:
        entry = self._entries.get(key)
        return entry.value if entry is not None else None

    def items_with_prefix(self, prefix: bytes) -> list[tuple[bytes, bytes]]:
        """Every live key starting with ``prefix`` and its value (tombstones left out)."""
        return [
            (key, entry.value)
            for key, entry in self._entries.items()
            if key.startswith(prefix) and entry.value is not None
        ]

    async def put(self, key: bytes, value: CursorValue | None) -> None:
        """Store a cursor (None: a tombstone, the cursor is deleted)."""
        await self.put_raw(key, value.to_bytes() if value is not None else None)

    async def put_raw(self, key: bytes, value: bytes | None) -> None:
        await self.put_many([(key, value)])

    async def put_many(self, items: list[tuple[bytes, bytes | None]]) -> None:
        """Append every (key, value) with acks=all (None: a tombstone); memory changes once
        they are committed. The epoch is checked in the same step the requests are queued,
        so a write of an older leadership can never land in a newer one behind its dict."""
        async with self._gate.writing():
            if not self.current:
                raise self.replica.state.not_leader_error()
            await self._append(items)
        if self._snapshot_due():
            await self._snapshot()

    async def _append(self, items: Sequence[tuple[bytes, bytes | None]]) -> None:
        subject = self.replica.spec.subject
        requests = [local_request(subject, "all", key=k, value=v or b"") for k, v in items]
        acks = await self.replica.produce(requests)
        self._appended += len(items)
        for (key, value), ack in zip(items, acks, strict=True):
            known = self._entries.get(key)
            if known is None or known.log_offset < ack.offset:
                self._entries[key] = CursorEntry(ack.offset, value)

    def _snapshot_due(self) -> bool:
        live = len(self._entries)
        return self._appended > max(self._snapshot_min_records, SNAPSHOT_LIVE_FACTOR * live)

    async def _snapshot(self) -> None:
        """Key compaction of a log that is never compacted in place: seal the active segment,
        append every live key again (acks=all), then delete every segment before the copy.
        Followers drop the same records by following the leader's log start offset
        (``FollowerPath.follow_log_start``); a load after this reads the copy and what came
        after it. Deleted keys (tombstones) are not copied: they end with the snapshot."""
        async with self._gate.exclusive():
            if not self._snapshot_due() or not self.current:
                return
            live = [(key, e.value) for key, e in self._entries.items() if e.value is not None]
            await self.replica.roll_segment()
            start = self.replica.log.log_end_offset
            if live:
                await self._append(live)
            self._entries = {k: e for k, e in self._entries.items() if e.value is not None}
            self._appended = len(live)
            loop = asyncio.get_running_loop()
            deleted = await loop.run_in_executor(
                None, self.replica.log.delete_segments_below, start
            )
            log.info(
                "%s: snapshot of %d cursor keys at offset %d, %d segment(s) deleted",
                self.replica.state.name,
                len(live),
                start,
                deleted,
            )


async def open_cursor_store(
    replica: PartitionReplica, config: CursorsConfig, read_bytes: int
) -> CursorStore:
    """Read the log of a partition this node now leads, once its HW covers the log end."""
    epoch = replica.state.leader_epoch
    end = await await_log_committed(replica, config.load_timeout_s)
    loop = asyncio.get_running_loop()
    entries = await loop.run_in_executor(None, load_cursors, replica.log, end, read_bytes)
    log.info("%s: %d cursor keys loaded at epoch %d", replica.state.name, len(entries), epoch)
    appended = end - replica.log.log_start_offset
    return CursorStore(
        replica,
        epoch,
        entries,
        appended=appended,
        snapshot_min_records=config.snapshot_min_records,
    )
