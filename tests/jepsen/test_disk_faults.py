"""Disk faults against a real partition log: each cuts or damages where it says, the log
still opens (recovering what it can), and the same seed replays the same damage."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from spark_log.log import PartitionLog
from tests.support.jepsen.disk_faults import (
    DiskFault,
    DiskFaultError,
    batches,
    flip_bytes,
    lose_unsynced_tail,
    segments,
    tear_last_write,
    truncate_segment,
)
from tests.unit.spark_log.log.conftest import make_batch, tiny_config

BATCHES_PER_SEGMENT = 4
RECORDS_PER_BATCH = 3


def crashed_log(directory: Path, *, rolled: bool = True) -> int:
    """A log with batches in two segments (the second after a roll, so the recovery point is
    above 0), left as a crash would leave it; returns its LEO."""
    log = PartitionLog.open(directory, tiny_config(segment_bytes=1024 * 1024))
    try:
        for round_ in range(2 if rolled else 1):
            for _ in range(BATCHES_PER_SEGMENT):
                log.append(make_batch(log.log_end_offset, RECORDS_PER_BATCH))
            if rolled and round_ == 0:
                log.roll()
        log.flush()
        return log.log_end_offset
    finally:
        image = directory.with_name(directory.name + "-image")
        shutil.copytree(directory, image)  # the disk at the moment of the crash
        log.close()
        shutil.rmtree(directory)
        image.rename(directory)


def reopened_leo(directory: Path) -> int:
    log = PartitionLog.open(directory, tiny_config(segment_bytes=1024 * 1024))
    try:
        return log.log_end_offset
    finally:
        log.close()


def test_tear_last_write_cuts_the_last_batch_partway(tmp_path: Path) -> None:
    directory = tmp_path / "p"
    leo = crashed_log(directory)
    last = batches(segments(directory)[-1])[-1]
    fault = tear_last_write(directory, random.Random(1))
    assert last.position < fault.size_after < last.end
    assert reopened_leo(directory) == leo - RECORDS_PER_BATCH


def test_truncate_segment_cuts_anywhere_and_the_log_still_opens(tmp_path: Path) -> None:
    directory = tmp_path / "p"
    leo = crashed_log(directory)
    fault = truncate_segment(directory, random.Random(2))
    assert 0 <= fault.size_after < fault.size_before
    assert reopened_leo(directory) <= leo


def test_flip_bytes_changes_bytes_inside_one_batch(tmp_path: Path) -> None:
    directory = tmp_path / "p"
    crashed_log(directory)
    before = {s: s.read_bytes() for s in segments(directory)}
    frames = {s: batches(s) for s in segments(directory)}
    fault = flip_bytes(directory, random.Random(3), count=2)
    after = fault.path.read_bytes()
    changed = [i for i, (a, b) in enumerate(zip(before[fault.path], after, strict=True)) if a != b]
    assert len(changed) == 2
    hit = {b.position for b in frames[fault.path] for i in changed if b.position <= i < b.end}
    assert len(hit) == 1  # both inside the same batch


def test_lose_unsynced_tail_never_keeps_what_the_recovery_point_covers(tmp_path: Path) -> None:
    directory = tmp_path / "p"
    crashed_log(directory)
    recovery_point = BATCHES_PER_SEGMENT * RECORDS_PER_BATCH  # the roll's new base
    faults = lose_unsynced_tail(directory, random.Random(4), "never")
    assert faults and all(f.kind == "lose_unsynced_tail" for f in faults)
    assert reopened_leo(directory) >= recovery_point


def test_lose_unsynced_tail_always_only_tears_the_last_write(tmp_path: Path) -> None:
    directory = tmp_path / "p"
    leo = crashed_log(directory)
    [fault] = lose_unsynced_tail(directory, random.Random(5), "always")
    assert fault.kind == "tear_last_write"
    assert reopened_leo(directory) == leo - RECORDS_PER_BATCH


def test_same_seed_same_damage(tmp_path: Path) -> None:
    def damage(name: str) -> list[DiskFault]:
        directory = tmp_path / name
        crashed_log(directory)
        return lose_unsynced_tail(directory, random.Random(6), "never")

    first, second = damage("a"), damage("b")
    assert [(f.size_after, f.detail) for f in first] == [(f.size_after, f.detail) for f in second]


def test_nothing_to_tear_is_a_typed_error(tmp_path: Path) -> None:
    directory = tmp_path / "empty"
    PartitionLog.open(directory, tiny_config()).close()
    with pytest.raises(DiskFaultError):
        tear_last_write(directory, random.Random(7))
    assert lose_unsynced_tail(directory, random.Random(7), "always") == []
