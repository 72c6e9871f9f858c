"""The epoch entry a new leader records before its first append (Kafka's makeLeader): kept
through a failed append and a resume after a full disk, dropped by a follower's truncation
and by a reopen, never kept for another leader's records."""

from __future__ import annotations

import errno
from collections.abc import Callable

import pytest

from spark_log.errors import StorageError
from spark_log.log import PartitionLog
from spark_log.log.errors import LeaderEpochRegressionError
from spark_log.log.segment_file import SegmentFile

from .conftest import append_records, make_batch, tiny_config


def _disk_full(self: SegmentFile, buffers: object) -> None:
    raise StorageError("disk full") from OSError(errno.ENOSPC, "No space left on device")


def test_the_entry_starts_at_the_leo_and_answers_with_it(
    open_log: Callable[..., PartitionLog],
) -> None:
    log = open_log()
    append_records(log, 2, epoch=3)
    log.assign_leader_epoch(5)
    assert log.epoch_entries == [(3, 0), (5, 6)]
    assert log.end_offset_for_epoch(4) == (3, 6)  # an epoch it never saw ends where 5 starts
    assert log.end_offset_for_epoch(5) == (5, 6)
    append_records(log, 1, epoch=5)
    assert log.epoch_entries == [(3, 0), (5, 6)] and log.end_offset_for_epoch(5) == (5, 9)
    with pytest.raises(LeaderEpochRegressionError):
        log.assign_leader_epoch(4)


def test_a_failed_append_and_the_resume_keep_the_leaders_entry(
    open_log: Callable[..., PartitionLog], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = open_log(config=tiny_config(segment_bytes=1 << 20))
    append_records(log, 2, epoch=3)
    log.assign_leader_epoch(5)
    monkeypatch.setattr(SegmentFile, "append", _disk_full)
    with pytest.raises(StorageError, match="disk full"):
        log.append(make_batch(6, 2, epoch=5))
    monkeypatch.undo()
    assert log.epoch_entries == [(3, 0), (5, 6)]
    log.resume_writes(4096)
    assert log.epoch_entries == [(3, 0), (5, 6)]
    assert log.end_offset_for_epoch(4) == (3, 6)


def test_a_failed_follower_append_drops_its_epoch(
    open_log: Callable[..., PartitionLog], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deposed leader's entry is gone once it appends another leader's records, so a failed
    append of those leaves no entry for records that are not there."""
    log = open_log(config=tiny_config(segment_bytes=1 << 20))
    append_records(log, 2, epoch=3)
    log.assign_leader_epoch(5)
    log.truncate_to(6)  # the follower's truncation drops the empty epoch 5
    assert log.epoch_entries == [(3, 0)]
    monkeypatch.setattr(SegmentFile, "append", _disk_full)
    with pytest.raises(StorageError, match="disk full"):
        log.append(make_batch(6, 2, epoch=6))
    monkeypatch.undo()
    log.resume_writes(4096)
    assert log.epoch_entries == [(3, 0)]
    log.append(make_batch(6, 2, epoch=4))  # an older epoch than the one led: accepted
    assert log.epoch_entries == [(3, 0), (4, 6)]


def test_truncating_at_the_leo_drops_an_empty_epoch(open_log: Callable[..., PartitionLog]) -> None:
    log = open_log()
    append_records(log, 2, epoch=3)
    log.assign_leader_epoch(5)
    log.truncate_to(100)
    assert (log.log_end_offset, log.epoch_entries) == (6, [(3, 0)])


def test_a_reopen_drops_the_empty_entry(open_log: Callable[..., PartitionLog]) -> None:
    log = open_log()
    append_records(log, 2, epoch=3)
    log.assign_leader_epoch(5)
    log.close()
    assert open_log().epoch_entries == [(3, 0)]


def test_an_empty_log_can_record_its_leader_epoch(open_log: Callable[..., PartitionLog]) -> None:
    log = open_log()
    log.assign_leader_epoch(2)
    assert log.epoch_entries == [(2, 0)]
    assert log.end_offset_for_epoch(1) == (1, 0)  # older than every entry: ends at 0
    append_records(log, 1, epoch=2)
    assert log.epoch_entries == [(2, 0)]
