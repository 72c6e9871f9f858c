"""Disk faults done to a KILLED node's partition directories before it restarts.

What a crash or a power cut can leave on disk (docs/storage.md): a torn last write, a segment
cut at any byte, flipped bits in a batch, and, under ``fsync = "never"`` (or "interval"),
the loss of anything after the ``recovery-point`` (the last offset known to be on disk). Batch
boundaries come from the storage code's own header parser, so a cut lands where intended.

Every choice is drawn from the caller's seeded ``random.Random``, and every fault returns a
``DiskFault`` saying exactly what it did: a failing run can be replayed and explained.
The node must not be running (its open files would be rewritten under it).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path

from spark_log.config import FsyncPolicy
from spark_log.errors import CorruptRecordError, LiftlogError
from spark_log.log.batch import BatchHeader, parse_header
from spark_log.log.checkpoint import read_offset_checkpoint
from spark_log.log.errors import CheckpointError
from spark_log.log.layout import LOG_SUFFIX, RECOVERY_POINT_FILE, list_segment_bases, segment_path

DEFAULT_FLIPPED_BYTES = 3


class DiskFaultError(LiftlogError):
    """The fault cannot be applied (no segment, no batch to damage)."""


@dataclass(frozen=True)
class DiskFault:
    """One damage done to one file: enough to replay and to explain a checker's finding."""

    kind: str
    path: Path
    size_before: int
    size_after: int
    detail: str


@dataclass(frozen=True)
class BatchAt:
    """A whole batch found in a segment file, at byte ``position``."""

    position: int
    header: BatchHeader

    @property
    def end(self) -> int:
        return self.position + self.header.size


def segments(partition_dir: Path) -> list[Path]:
    """The partition's segment files, in offset order (the last is the active one)."""
    return [segment_path(partition_dir, b, LOG_SUFFIX) for b in list_segment_bases(partition_dir)]


def batches(segment: Path) -> list[BatchAt]:
    """Every whole batch of ``segment`` from the start, stopping at the first torn or bad
    header (what follows it is already damage, not a boundary)."""
    data = segment.read_bytes()
    found: list[BatchAt] = []
    position = 0
    while position < len(data):
        try:
            header = parse_header(data, position)
        except CorruptRecordError:
            break
        if position + header.size > len(data):
            break
        found.append(BatchAt(position, header))
        position += header.size
    return found


def tear_last_write(partition_dir: Path, rng: random.Random) -> DiskFault:
    """Cut the last batch of the last segment holding one partway (a write the crash tore)."""
    segment, batch = _last_batch(partition_dir)
    cut = rng.randint(batch.position + 1, batch.end - 1)
    return _truncate(
        "tear_last_write",
        segment,
        cut,
        f"batch at offset {batch.header.base_offset} ({batch.header.record_count} records, "
        f"bytes {batch.position}..{batch.end}) cut at byte {cut}",
    )


def truncate_segment(
    partition_dir: Path, rng: random.Random, segment: Path | None = None
) -> DiskFault:
    """Cut ``segment`` (default: one chosen at random among non-empty ones) at a random byte."""
    if segment is None:
        candidates = [s for s in segments(partition_dir) if s.stat().st_size > 0]
        if not candidates:
            raise DiskFaultError(f"{partition_dir}: no non-empty segment to truncate")
        segment = rng.choice(candidates)
    size = segment.stat().st_size
    if size == 0:
        raise DiskFaultError(f"{segment}: empty, nothing to truncate")
    cut = rng.randrange(size)
    return _truncate("truncate_segment", segment, cut, f"cut at byte {cut} of {size}")


def flip_bytes(
    partition_dir: Path, rng: random.Random, count: int = DEFAULT_FLIPPED_BYTES
) -> DiskFault:
    """XOR ``count`` random bytes of one random batch (bit rot, a misdirected write)."""
    with_batches = [(s, found) for s in segments(partition_dir) if (found := batches(s))]
    if not with_batches:
        raise DiskFaultError(f"{partition_dir}: no batch to corrupt")
    segment, found = rng.choice(with_batches)
    batch = rng.choice(found)
    positions = sorted(rng.sample(range(batch.position, batch.end), min(count, batch.header.size)))
    size = segment.stat().st_size
    with segment.open("r+b") as file:
        for position in positions:
            file.seek(position)
            original = file.read(1)[0]
            file.seek(position)
            file.write(bytes([original ^ rng.randint(1, 255)]))
        file.flush()
        os.fsync(file.fileno())
    return DiskFault(
        "flip_bytes",
        segment,
        size,
        size,
        f"batch at offset {batch.header.base_offset}: bytes {positions} flipped",
    )


def lose_unsynced_tail(
    partition_dir: Path, rng: random.Random, fsync: FsyncPolicy
) -> list[DiskFault]:
    """What a power cut leaves. Under "always" every acknowledged record was fsynced before
    its ack, so only the last write may be torn. Under "interval" anything after the
    ``recovery-point`` may be gone: its segment is cut at a random byte at or after the point's
    position, and any later segment at a random byte. Under "never" nothing after the point was
    ever fsynced, so the page cache took all of it: every segment is cut exactly at the point
    (a random cut could keep the whole tail, and an unsafe run would then prove nothing)."""
    if fsync == "always":
        try:
            return [tear_last_write(partition_dir, rng)]
        except DiskFaultError:
            return []  # nothing written: nothing to tear
    try:
        recovery_point = read_offset_checkpoint(partition_dir / RECOVERY_POINT_FILE) or 0
    except CheckpointError:
        recovery_point = 0  # unreadable: the log itself rescans from 0, so may the disk
    faults = []
    for segment in _segments_from(partition_dir, recovery_point):
        size = segment.stat().st_size
        durable = _position_of(segment, recovery_point)
        cut = durable if fsync == "never" else rng.randint(durable, size)
        faults.append(
            _truncate(
                "lose_unsynced_tail",
                segment,
                cut,
                f"recovery point {recovery_point} at byte {durable}; cut at {cut} of {size}",
            )
        )
    return faults


def _segments_from(partition_dir: Path, offset: int) -> list[Path]:
    """The segment holding ``offset`` (the last with base <= offset) and every later one."""
    bases = list_segment_bases(partition_dir)
    holding = [b for b in bases if b <= offset]
    first = holding[-1] if holding else (bases[0] if bases else 0)
    return [segment_path(partition_dir, b, LOG_SUFFIX) for b in bases if b >= first]


def _position_of(segment: Path, offset: int) -> int:
    """Byte position where durable data ends in ``segment``: the start of the first batch at
    or after ``offset`` (0 for a later segment), the end of the whole batches otherwise."""
    found = batches(segment)
    for batch in found:
        if batch.header.next_offset > offset:
            return batch.position
    return found[-1].end if found else 0


def _last_batch(partition_dir: Path) -> tuple[Path, BatchAt]:
    for segment in reversed(segments(partition_dir)):
        found = batches(segment)
        if found:
            return segment, found[-1]
    raise DiskFaultError(f"{partition_dir}: no batch to tear")


def _truncate(kind: str, segment: Path, cut: int, detail: str) -> DiskFault:
    size = segment.stat().st_size
    os.truncate(segment, cut)
    return DiskFault(kind, segment, size, cut, detail)
