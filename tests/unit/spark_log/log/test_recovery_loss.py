"""Recovery tells a torn tail (normal after a crash) from a loss of durable data: a cut below
the recovery point (fsynced) or the checkpointed HW (committed) is reported, persisted until
cleared, and never confused with a truncation done on purpose."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from spark_log.log import PartitionLog
from spark_log.log.layout import HIGH_WATERMARK_FILE, RECOVERY_LOSS_FILE, RECOVERY_POINT_FILE
from spark_log.log.recovery import RecoveryLoss
from spark_log.log.segment import LogSegment

from .conftest import all_offsets, crash_image, make_batch, tiny_config
from .test_recovery import CONFIG, batch_positions, crashed, flip, seg, segment_bases

ONE_SEGMENT = tiny_config(segment_bytes=1 << 20, index_interval_bytes=256)
PER_BATCH = 3


def append_batches(log: PartitionLog, count: int) -> None:
    for _ in range(count):
        log.append(make_batch(log.log_end_offset, PER_BATCH, value_size=50))


def flip_batch(directory: Path, index: int) -> int:
    """Flip a payload byte of the ``index``-th batch of the first segment; its base offset."""
    segment = seg(directory, 0)
    flip(segment, batch_positions(segment)[index] + 60)
    return index * PER_BATCH


def test_a_torn_tail_past_every_durable_mark_is_not_a_loss(tmp_path: Path):
    image, bases, _ = crashed(tmp_path)
    last = seg(image, bases[-1])
    with open(last, "r+b") as f:
        f.truncate(last.stat().st_size - 7)
    log = PartitionLog.open(image, CONFIG)
    assert log.log_end_offset == 117
    assert log.recovery_loss is None
    assert not (image / RECOVERY_LOSS_FILE).exists()
    log.close()


def test_a_flip_below_the_recovery_point_is_a_durable_loss(tmp_path: Path, caplog):
    log = PartitionLog.open(tmp_path / "live", ONE_SEGMENT)
    append_batches(log, 10)
    log.close()
    log = PartitionLog.open(tmp_path / "live", ONE_SEGMENT)  # recovery point 30, mid-segment
    append_batches(log, 10)
    image = crash_image(log.directory, tmp_path / "image")
    log.close()
    assert (image / RECOVERY_POINT_FILE).read_text() == "0\n30\n"
    lost_from = flip_batch(image, 3)
    with caplog.at_level(logging.WARNING, logger="liftlog.log"):
        damaged = PartitionLog.open(image, ONE_SEGMENT)
    assert damaged.log_end_offset == lost_from
    assert damaged.recovery_loss == RecoveryLoss(lost_from, 30)
    assert "LOST DURABLE DATA" in caplog.text
    damaged.close()


def test_a_flip_below_the_checkpointed_high_watermark_is_a_durable_loss(tmp_path: Path):
    log = PartitionLog.open(tmp_path / "live", ONE_SEGMENT)
    append_batches(log, 20)
    log.set_high_watermark(45)
    log.checkpoint_high_watermark()
    image = crash_image(log.directory, tmp_path / "image")
    log.close()
    assert not (image / RECOVERY_POINT_FILE).exists()  # never rolled nor reopened: 0
    lost_from = flip_batch(image, 5)
    damaged = PartitionLog.open(image, ONE_SEGMENT)
    assert damaged.recovery_loss == RecoveryLoss(lost_from, 45)
    assert damaged.high_watermark == lost_from
    damaged.close()


def test_a_missing_segment_below_the_checkpointed_high_watermark_is_a_durable_loss(
    tmp_path: Path,
):
    image, bases, _ = crashed(tmp_path)
    (image / RECOVERY_POINT_FILE).write_text("0\n0\n")  # rescanned, so the gap is seen
    (image / HIGH_WATERMARK_FILE).write_text("0\n120\n")
    for suffix in (".log", ".index", ".timeindex"):
        seg(image, bases[2], suffix).unlink()
    log = PartitionLog.open(image, CONFIG)
    assert log.recovery_loss == RecoveryLoss(bases[2], 120)
    log.close()


def test_the_loss_is_persisted_until_cleared(tmp_path: Path):
    log = PartitionLog.open(tmp_path / "live", ONE_SEGMENT)
    append_batches(log, 20)
    log.set_high_watermark(60)
    log.checkpoint_high_watermark()
    image = crash_image(log.directory, tmp_path / "image")
    log.close()
    flip_batch(image, 10)
    PartitionLog.open(image, ONE_SEGMENT).close()  # the checkpoints now say 30: no evidence
    again = PartitionLog.open(image, ONE_SEGMENT)
    assert again.recovery_loss == RecoveryLoss(30, 60)  # ... but the marker remembers
    append_batches(again, 10)
    again.clear_recovery_loss()
    assert again.recovery_loss is None
    assert not (image / RECOVERY_LOSS_FILE).exists()
    again.close()
    assert PartitionLog.open(image, ONE_SEGMENT).recovery_loss is None


def test_a_second_loss_before_the_first_is_cleared_widens_the_range(tmp_path: Path):
    log = PartitionLog.open(tmp_path / "live", ONE_SEGMENT)
    append_batches(log, 20)
    log.set_high_watermark(60)
    log.checkpoint_high_watermark()
    image = crash_image(log.directory, tmp_path / "image")
    log.close()
    flip_batch(image, 10)
    damaged = PartitionLog.open(image, ONE_SEGMENT)
    assert damaged.recovery_loss == RecoveryLoss(30, 60)
    damaged.set_high_watermark(30)
    damaged.checkpoint_high_watermark()
    second = crash_image(image, tmp_path / "second")
    damaged.close()
    flip_batch(second, 4)
    assert PartitionLog.open(second, ONE_SEGMENT).recovery_loss == RecoveryLoss(12, 60)


def test_an_unreadable_marker_still_counts_as_a_loss(tmp_path: Path):
    log = PartitionLog.open(tmp_path / "live", ONE_SEGMENT)
    append_batches(log, 4)
    log.close()
    (log.directory / RECOVERY_LOSS_FILE).write_text("garbage")
    again = PartitionLog.open(log.directory, ONE_SEGMENT)
    assert again.recovery_loss == RecoveryLoss(12, 12)
    again.close()


@pytest.mark.parametrize("below_start", [False, True])
def test_a_crash_during_truncation_below_the_hw_is_not_a_loss(
    tmp_path: Path, monkeypatch, below_start
):
    """A truncation lowers the recovery point and the checkpointed HW before it removes
    anything, so a crash part-way (here: after one segment file was deleted) does not look
    like a loss of durable data at the next open."""
    log = PartitionLog.open(tmp_path / "live", CONFIG)
    append_batches(log, 40)
    log.set_high_watermark(log.log_end_offset)
    log.checkpoint_high_watermark()
    bases = segment_bases(log.directory)
    real_delete = LogSegment.delete
    deleted: list[int] = []

    def crash_after_one_delete(segment: LogSegment) -> None:
        if deleted:
            raise SimulatedCrashError
        deleted.append(segment.base_offset)
        real_delete(segment)

    monkeypatch.setattr(LogSegment, "delete", crash_after_one_delete)
    with pytest.raises(SimulatedCrashError):
        if below_start:
            log.truncate_fully_and_start_at(7)
        else:
            log.truncate_to(bases[2] + 4)
    image = crash_image(log.directory, tmp_path / "image")
    monkeypatch.undo()
    recovered = PartitionLog.open(image, CONFIG)
    assert recovered.log_end_offset < 120
    assert recovered.recovery_loss is None
    all_offsets(recovered)
    recovered.close()


class SimulatedCrashError(Exception):
    pass
