"""PartitionLog behaviour, example by example (the property tests cover the combinations)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from spark_log.errors import (
    CorruptRecordError,
    InvalidRequestError,
    OffsetOutOfRangeError,
    StorageError,
)
from spark_log.log import (
    LeaderEpochRegressionError,
    LogClosedError,
    NonContiguousBatchError,
    PartitionLog,
    decode_header,
    iter_batches,
    records_from_batches,
)
from spark_log.log.layout import (
    CLEAN_SHUTDOWN_FILE,
    HIGH_WATERMARK_FILE,
    LEADER_EPOCH_FILE,
    RECOVERY_POINT_FILE,
)
from spark_log.log.retention import RetentionLimits
from spark_log.log.roll import should_roll
from spark_log.log.segment_file import SegmentFile

from .conftest import BASE_TS, Clock, all_offsets, append_records, make_batch, tiny_config


def test_new_log_is_empty_and_starts_at_zero(open_log):
    log = open_log()
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (0, 0, 0)
    assert log.read(0, 1000) == b""
    assert log.latest_epoch is None and log.epoch_entries == []
    assert log.segment_count == 1 and log.size_bytes == 0
    assert log.offset_for_timestamp(0) is None
    assert log.end_offset_for_epoch(0) == (-1, -1)
    assert log.config.fsync == "always"


def test_append_returns_headers_and_advances_the_leo(open_log):
    log = open_log()
    header = log.append(make_batch(0, 5))
    assert (header.base_offset, header.next_offset, log.log_end_offset) == (0, 5, 5)
    headers = log.append_many([make_batch(5, 2), make_batch(7, 3)])
    assert [h.base_offset for h in headers] == [5, 7]
    assert log.log_end_offset == 10
    assert all_offsets(log) == list(range(10))


def test_append_rejects_gaps_overlaps_and_non_single_batches(open_log):
    log = open_log()
    log.append(make_batch(0, 3))
    with pytest.raises(NonContiguousBatchError):
        log.append(make_batch(4, 1))
    with pytest.raises(NonContiguousBatchError):
        log.append(make_batch(2, 1))
    with pytest.raises(InvalidRequestError):
        log.append(make_batch(3, 1) + make_batch(4, 1))
    with pytest.raises(CorruptRecordError):
        log.append(make_batch(3, 1)[:-1])
    assert log.log_end_offset == 3


def test_append_many_validates_everything_before_writing(open_log):
    log = open_log()
    with pytest.raises(NonContiguousBatchError):
        log.append_many([make_batch(0, 2), make_batch(2, 2), make_batch(9, 1)])
    assert log.log_end_offset == 0 and log.size_bytes == 0


def test_append_verifies_the_crc_unless_told_the_bytes_are_fresh(open_log):
    log = open_log()
    corrupt = bytearray(make_batch(0, 2))
    corrupt[-3] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        log.append(bytes(corrupt))
    log.append(make_batch(0, 2), verify_crc=False)
    assert log.log_end_offset == 2


def test_leader_epochs_are_cached_and_never_go_back(open_log):
    log = open_log()
    log.append(make_batch(0, 2, epoch=1))
    log.append(make_batch(2, 2, epoch=1))
    log.append_many([make_batch(4, 2, epoch=3), make_batch(6, 2, epoch=4)])
    assert log.epoch_entries == [(1, 0), (3, 4), (4, 6)]
    with pytest.raises(LeaderEpochRegressionError):
        log.append(make_batch(8, 1, epoch=2))
    assert log.end_offset_for_epoch(1) == (1, 4)
    assert log.end_offset_for_epoch(2) == (1, 4)
    assert log.end_offset_for_epoch(4) == (4, 8)
    assert (log.directory / LEADER_EPOCH_FILE).read_text() == "0\n3\n1 0\n3 4\n4 6\n"


def test_segments_roll_on_size_and_reads_span_them(open_log):
    log = open_log()
    append_records(log, 40, value_size=100)
    assert log.segment_count > 10
    files = sorted(p.name for p in log.directory.iterdir())
    assert "00000000000000000000.log" in files and "00000000000000000000.index" in files
    assert all_offsets(log) == list(range(120))


def test_a_batch_bigger_than_a_segment_gets_a_segment_of_its_own(open_log):
    log = open_log()
    log.append(make_batch(0, 2))
    log.append(make_batch(2, 3, value_size=2000))
    log.append(make_batch(5, 1))
    assert log.segment_count == 3
    assert all_offsets(log) == list(range(6))


def test_segments_roll_on_age_measured_by_batch_timestamps(open_log):
    log = open_log(config=tiny_config(segment_bytes=1 << 20, segment_ms=1000))
    log.append(make_batch(0, 1, ts=BASE_TS))
    log.append(make_batch(1, 1, ts=BASE_TS + 1000))
    assert log.segment_count == 1
    log.append(make_batch(2, 1, ts=BASE_TS + 1001))
    assert log.segment_count == 2
    assert all_offsets(log) == [0, 1, 2]


def test_roll_when_relative_offsets_or_positions_would_overflow():
    header = decode_header(make_batch(2**32, 1))
    common = {"rolling_timestamp_ms": None, "segment_bytes": 2**40, "segment_ms": 10**12}
    assert should_roll(segment_base=0, segment_size=100, header=header, **common)
    assert not should_roll(segment_base=1, segment_size=100, header=header, **common)
    assert not should_roll(segment_base=0, segment_size=0, header=header, **common)
    assert should_roll(segment_base=1, segment_size=2**32 - 50, header=header, **common)


def test_read_returns_whole_batches_from_the_one_holding_the_offset(open_log):
    log = open_log(config=tiny_config(segment_bytes=1 << 20))
    batches = [make_batch(0, 4), make_batch(4, 4), make_batch(8, 4)]
    log.append_many(batches)
    assert log.read(5, 1) == batches[1]  # at least one batch, even over max_bytes
    assert log.read(5, len(batches[1]) + len(batches[2])) == batches[1] + batches[2]
    assert log.read(5, len(batches[1]) + len(batches[2]) - 1) == batches[1]
    assert log.read(0, 10**6, upper_offset=8) == batches[0] + batches[1]
    assert log.read(0, 10**6, upper_offset=5) == batches[0] + batches[1]
    assert log.read(8, 10**6, upper_offset=8) == b""
    assert log.read(12, 10**6) == b""
    assert log.read(0, 0) == batches[0]


def test_read_out_of_range(open_log):
    log = open_log()
    append_records(log, 3)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(10, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 100)
    with pytest.raises(InvalidRequestError):
        log.read(0, -1)


def test_high_watermark_is_clamped_monotonic_and_checkpointed(open_log, tmp_path: Path):
    log = open_log()
    append_records(log, 4)
    log.set_high_watermark(5)
    assert log.high_watermark == 5
    log.set_high_watermark(3)
    assert log.high_watermark == 5
    log.set_high_watermark(100)
    assert log.high_watermark == 12
    log.checkpoint_high_watermark()
    assert (log.directory / HIGH_WATERMARK_FILE).read_text() == "0\n12\n"
    log.truncate_to(6)
    assert log.high_watermark == 6


def test_flush_tracks_the_flushed_offset(open_log):
    log = open_log(config=tiny_config(segment_bytes=8192))
    append_records(log, 2)
    assert log.flushed_offset == 0
    log.flush()
    assert log.flushed_offset == 6
    append_records(log, 40, value_size=200)  # rolls fsync sealed segments
    assert log.flushed_offset > 6
    log.flush()
    assert log.flushed_offset == log.log_end_offset


def test_close_and_reopen_keeps_everything(open_log, tmp_path: Path):
    log = open_log()
    append_records(log, 30, value_size=50)
    log.append(make_batch(90, 2, epoch=2))
    log.set_high_watermark(50)
    log.close()
    assert (tmp_path / "p0" / CLEAN_SHUTDOWN_FILE).exists()
    assert (tmp_path / "p0" / RECOVERY_POINT_FILE).read_text() == "0\n92\n"
    again = open_log()
    assert not (tmp_path / "p0" / CLEAN_SHUTDOWN_FILE).exists()
    assert (again.log_end_offset, again.high_watermark) == (92, 50)
    assert again.epoch_entries == [(0, 0), (2, 90)]
    assert all_offsets(again) == list(range(92))
    append_records(again, 3, epoch=2)
    assert all_offsets(again) == list(range(101))


def test_closed_log_refuses_work(open_log):
    log = open_log()
    log.close()
    log.close()  # idempotent
    with pytest.raises(LogClosedError):
        log.read(0, 10)
    with pytest.raises(LogClosedError):
        log.append(make_batch(0))
    with pytest.raises(StorageError):
        log.flush()


def test_truncate_to_drops_the_tail_and_appends_continue(open_log):
    log = open_log()
    append_records(log, 30, value_size=60, epoch=0)
    append_records(log, 10, value_size=60, epoch=3)
    log.set_high_watermark(100)
    log.truncate_to(85)  # inside epoch 3's first batch? 90 is where epoch 3 started
    assert log.log_end_offset == 84  # batches are 3 records; 84 starts the batch holding 85
    assert log.high_watermark == 84
    assert log.epoch_entries == [(0, 0)]
    assert all_offsets(log) == list(range(84))
    log.append(make_batch(84, 5, epoch=4))
    assert log.epoch_entries == [(0, 0), (4, 84)]
    assert all_offsets(log) == list(range(89))


def test_truncate_to_a_segment_boundary_and_beyond_the_end(open_log):
    log = open_log()
    append_records(log, 20, value_size=150)
    segment_bases = sorted(
        int(p.name[:20]) for p in log.directory.iterdir() if p.name.endswith(".log")
    )
    boundary = segment_bases[3]
    log.truncate_to(log.log_end_offset + 10)  # no-op
    assert log.log_end_offset == 60
    log.truncate_to(boundary)
    assert log.log_end_offset == boundary and log.segment_count == 3
    assert all_offsets(log) == list(range(boundary))
    append_records(log, 2)
    assert all_offsets(log) == list(range(boundary + 6))


def test_truncate_fully_and_start_at(open_log):
    log = open_log()
    append_records(log, 20, value_size=100, epoch=1)
    log.set_high_watermark(30)
    log.truncate_fully_and_start_at(500)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (500, 500, 500)
    assert log.epoch_entries == [] and log.segment_count == 1
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)
    log.append(make_batch(500, 2, epoch=0))
    assert all_offsets(log) == [500, 501]
    log.truncate_to(3)  # below the log start: start over there, as Kafka does
    assert (log.log_start_offset, log.log_end_offset) == (3, 3)


def test_offset_for_timestamp_across_segments(open_log):
    log = open_log()
    for i in range(30):
        log.append(make_batch(i * 3, 3, ts=BASE_TS + i * 100, value_size=80))
    assert log.offset_for_timestamp(0) == 0
    assert log.offset_for_timestamp(BASE_TS + 1) == 1
    assert log.offset_for_timestamp(BASE_TS + 1500) == 45
    assert log.offset_for_timestamp(BASE_TS + 1503) == 48
    assert log.offset_for_timestamp(BASE_TS + 2902) == 89
    assert log.offset_for_timestamp(BASE_TS + 2903) is None


def test_retention_by_bytes_keeps_at_least_the_limit_and_respects_hw(open_log):
    log = open_log()
    append_records(log, 30, value_size=150)
    assert (
        log.delete_old_segments(retention_ms=None, retention_bytes=0, retention_messages=None) == 0
    )
    log.set_high_watermark(45)
    deleted = log.delete_old_segments(retention_ms=None, retention_bytes=0, retention_messages=None)
    assert deleted > 0
    assert log.log_start_offset <= 45
    assert all_offsets(log) == list(range(log.log_start_offset, 90))
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)


def test_deleting_below_an_offset_drops_whole_sealed_segments_under_the_hw(open_log):
    log = open_log()
    append_records(log, 30, value_size=150)
    assert log.delete_segments_below(60) == 0  # nothing committed yet
    log.set_high_watermark(45)
    assert log.delete_segments_below(60) > 0
    start = log.log_start_offset
    assert 0 < start <= 45  # bounded by the HW, and never a part of a segment
    assert all_offsets(log) == list(range(start, 90))
    log.set_high_watermark(90)
    assert log.delete_segments_below(start) == 0  # nothing ends at or below the start
    log.delete_segments_below(10**6)
    assert log.log_start_offset < 90  # the active segment always stays
    assert all_offsets(log) == list(range(log.log_start_offset, 90))


def test_retention_by_age_uses_the_injected_clock(open_log):
    clock = Clock(BASE_TS)
    log = open_log(now_ms=clock)
    for i in range(20):
        log.append(make_batch(i * 3, 3, ts=BASE_TS + i * 1000, value_size=150))
    log.set_high_watermark(log.log_end_offset)
    clock.now_ms = BASE_TS + 20_000
    assert (
        log.delete_old_segments(retention_ms=30_000, retention_bytes=None, retention_messages=None)
        == 0
    )
    deleted = log.delete_old_segments(
        retention_ms=10_000, retention_bytes=None, retention_messages=None
    )
    assert deleted > 0
    assert log.offset_for_timestamp(0) == log.log_start_offset


def test_retention_stops_at_max_deletable_offset(open_log):
    log = open_log()
    append_records(log, 30, value_size=150)
    log.set_high_watermark(90)
    log.delete_old_segments(
        retention_ms=None, retention_bytes=None, retention_messages=0, max_deletable_offset=20
    )
    assert 0 < log.log_start_offset <= 20
    assert log.epoch_entries == [(0, log.log_start_offset)]


def test_deletable_segment_count_predicts_retention_and_deletes_nothing(open_log):
    log = open_log()
    append_records(log, 30, value_size=150)
    log.set_high_watermark(90)
    assert log.deletable_segment_count(RetentionLimits()) == 0
    by_count = RetentionLimits(retention_messages=0)
    bounded = log.deletable_segment_count(by_count, max_deletable_offset=20)
    predicted = log.deletable_segment_count(by_count)
    assert 0 < bounded < predicted
    assert log.log_start_offset == 0 and all_offsets(log) == list(range(90))
    assert (
        log.delete_old_segments(retention_ms=None, retention_bytes=None, retention_messages=0)
        == predicted
    )


def test_recovery_point_and_checkpoints_written_atomically(open_log):
    log = open_log()
    append_records(log, 20, value_size=150)
    assert int((log.directory / RECOVERY_POINT_FILE).read_text().split()[1]) == log.recovery_point
    assert log.recovery_point > 0
    assert not [p for p in os.listdir(log.directory) if p.endswith(".tmp")]


def test_delete_removes_the_directory(open_log, tmp_path: Path):
    log = open_log()
    append_records(log, 3)
    log.delete()
    assert not (tmp_path / "p0").exists()


def test_read_result_decodes_as_batches(open_log):
    log = open_log()
    append_records(log, 10, value_size=100)
    data = log.read(4, 10_000)
    headers = [h for h, _ in iter_batches(data)]
    assert headers[0].base_offset == 3
    records = records_from_batches(data, 4, log.log_end_offset, 5)
    assert [r.offset for r in records] == [4, 5, 6, 7, 8]


def test_open_accepts_str_paths_and_creates_missing_directories(tmp_path: Path):
    log = PartitionLog.open(tmp_path / "a" / "b" / "c", tiny_config())
    try:
        assert log.log_end_offset == 0
    finally:
        log.close()


def test_a_failed_write_is_cut_back_and_the_log_stays_usable(open_log, monkeypatch):
    log = open_log(config=tiny_config(segment_bytes=1 << 20))
    append_records(log, 2)
    size = log.size_bytes

    def failing_append(self, buffers):
        os.write(self.fd, bytes(buffers[0])[:50])  # half a batch reaches the file
        raise StorageError("disk full")

    monkeypatch.setattr(SegmentFile, "append", failing_append)
    with pytest.raises(StorageError, match="disk full"):
        log.append(make_batch(6, 2, epoch=5))
    monkeypatch.undo()
    assert (log.log_end_offset, log.size_bytes, log.epoch_entries) == (6, size, [(0, 0)])
    append_records(log, 1)
    assert all_offsets(log) == list(range(9))


def test_negative_epochs_and_offsets_are_invalid(open_log):
    log = open_log()
    with pytest.raises(InvalidRequestError):
        log.truncate_to(-1)
    with pytest.raises(InvalidRequestError):
        log.truncate_fully_and_start_at(-5)
    with pytest.raises(InvalidRequestError):
        log.delete_old_segments(retention_ms=-1, retention_bytes=None, retention_messages=None)
