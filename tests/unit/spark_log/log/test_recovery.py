"""Recovery after an unclean shutdown: the log reopens at the last good batch, rebuilds what it
rescanned and accepts appends again. Crashes are simulated by copying a live log directory."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import pytest

from spark_log.log import PartitionLog, iter_batches, records_from_batches
from spark_log.log.layout import (
    CLEAN_SHUTDOWN_FILE,
    HIGH_WATERMARK_FILE,
    LEADER_EPOCH_FILE,
    RECOVERY_POINT_FILE,
)

from .conftest import all_offsets, crash_image, make_batch, tiny_config

CONFIG = tiny_config(segment_bytes=8192, index_interval_bytes=256)
BATCH_RECORDS = 3


def build(directory: Path, batches: int = 40, *, epoch: int = 0) -> PartitionLog:
    """A live log of ``batches`` batches of 3 records over several 8 KiB segments."""
    log = PartitionLog.open(directory, CONFIG)
    for _ in range(batches):
        log.append(make_batch(log.log_end_offset, BATCH_RECORDS, epoch=epoch, value_size=100))
    return log


def crashed(tmp_path: Path, batches: int = 40, **kwargs: int) -> tuple[Path, list[int], int]:
    """A crash image of a live log, its segment bases, and a typical batch size."""
    log = build(tmp_path / "live", batches, **kwargs)
    image = crash_image(log.directory, tmp_path / "image")
    bases = segment_bases(image)
    size = len(make_batch(0, BATCH_RECORDS, value_size=100))
    log.close()
    return image, bases, size


def batch_positions(path: Path) -> list[int]:
    """Start positions of the batches in a segment file."""
    positions, pos = [], 0
    for header, _ in iter_batches(path.read_bytes()):
        positions.append(pos)
        pos += header.size
    return positions


def segment_bases(directory: Path) -> list[int]:
    return sorted(int(p.name[:20]) for p in directory.glob("*.log"))


def seg(directory: Path, base: int, suffix: str = ".log") -> Path:
    return directory / f"{base:020d}{suffix}"


def flip(path: Path, position: int) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)
        f.seek(position)
        f.write(bytes([byte[0] ^ 0xFF]))


def reopen_and_check(image: Path, expected_leo: int) -> PartitionLog:
    log = PartitionLog.open(image, CONFIG)
    assert log.log_end_offset == expected_leo
    assert all_offsets(log) == list(range(expected_leo))
    for start in range(0, expected_leo, 7):  # index lookups from everywhere
        data = log.read(start, 1)
        assert records_from_batches(data, start, expected_leo, 1)[0].offset == start
    log.append(make_batch(expected_leo, 2))
    assert all_offsets(log) == list(range(expected_leo + 2))
    return log


def test_crash_without_damage_keeps_everything(tmp_path: Path):
    image, _, _ = crashed(tmp_path)
    assert not (image / CLEAN_SHUTDOWN_FILE).exists()
    reopen_and_check(image, 120).close()


@pytest.mark.parametrize("cut", [1, 42, 43, 200])
def test_torn_tail_is_cut_at_the_last_whole_batch(tmp_path: Path, cut: int, caplog):
    image, bases, _ = crashed(tmp_path)
    last = seg(image, bases[-1])
    os.truncate(last, last.stat().st_size - cut)
    with caplog.at_level(logging.WARNING, logger="liftlog.log"):
        reopen_and_check(image, 117).close()
    assert "log cut at offset 117" in caplog.text


def test_garbage_after_the_last_batch_is_cut(tmp_path: Path):
    image, bases, _ = crashed(tmp_path)
    last = seg(image, bases[-1])
    good_size = last.stat().st_size
    with open(last, "ab") as f:
        f.write(os.urandom(300))
    reopen_and_check(image, 120).close()
    assert last.stat().st_size == good_size + len(make_batch(120, 2))


@pytest.mark.parametrize("position_from_end", [1, 100, 600])
def test_flipped_byte_in_the_last_batch_drops_it(tmp_path: Path, position_from_end: int):
    image, bases, _ = crashed(tmp_path)
    last = seg(image, bases[-1])
    flip(last, last.stat().st_size - position_from_end)
    reopen_and_check(image, 117).close()


def test_corrupt_base_offset_is_caught_by_the_dense_offset_check(tmp_path: Path):
    image, bases, _ = crashed(tmp_path)
    last = seg(image, bases[-1])
    flip(last, batch_positions(last)[-1] + 7)  # the low byte of base_offset (not CRC'd)
    reopen_and_check(image, 117).close()


def test_flip_in_an_older_unflushed_segment_cuts_the_log_there(tmp_path: Path, caplog):
    image, bases, _ = crashed(tmp_path)
    assert len(bases) >= 5
    # Pretend nothing was flushed after segment 1: segments 1.. are rescanned on open.
    (image / RECOVERY_POINT_FILE).write_text(f"0\n{bases[1]}\n")
    victim = bases[2]
    flip(seg(image, victim), batch_positions(seg(image, victim))[1] + 300)  # second batch
    with caplog.at_level(logging.WARNING, logger="liftlog.log"):
        log = reopen_and_check(image, victim + BATCH_RECORDS)
    assert segment_bases(image) == bases[:3]
    assert "deleting segment" in caplog.text
    log.close()


def test_segments_below_the_recovery_point_are_trusted_without_a_scan(tmp_path: Path):
    image, bases, _ = crashed(tmp_path)
    (image / RECOVERY_POINT_FILE).write_text(f"0\n{bases[-1]}\n")
    flip(seg(image, bases[0]), batch_positions(seg(image, bases[0]))[1] + 300)  # bit rot
    log = PartitionLog.open(image, CONFIG)
    assert log.log_end_offset == 120  # not rescanned ...
    with pytest.raises(Exception, match="crc"):
        records_from_batches(log.read(3, 1), 3, 120, 10)  # ... but consumers verify the CRC
    log.close()


def test_missing_recovery_point_rescans_everything(tmp_path: Path):
    image, bases, _ = crashed(tmp_path)
    (image / RECOVERY_POINT_FILE).unlink()
    flip(seg(image, bases[1]), batch_positions(seg(image, bases[1]))[1] + 5)
    reopen_and_check(image, bases[1] + 1 * BATCH_RECORDS).close()


def test_a_missing_segment_in_the_middle_cuts_the_log_at_the_gap(tmp_path: Path):
    image, bases, _ = crashed(tmp_path)
    (image / RECOVERY_POINT_FILE).write_text("0\n0\n")
    for suffix in (".log", ".index", ".timeindex"):
        seg(image, bases[2], suffix).unlink(missing_ok=True)
    reopen_and_check(image, bases[2]).close()
    assert not set(segment_bases(image)) & set(bases[3:])


def test_empty_last_segment_from_a_crash_during_roll(tmp_path: Path):
    image, _, _ = crashed(tmp_path)
    seg(image, 120).touch()
    reopen_and_check(image, 120).close()


@pytest.mark.parametrize(
    "damage",
    ["delete", "truncate", "garbage", "empty", "beyond_file"],
)
@pytest.mark.parametrize("clean", [True, False])
def test_missing_or_corrupt_index_files_are_rebuilt(tmp_path: Path, damage: str, clean: bool):
    reference = build(tmp_path / "reference")
    reference.close()
    live = build(tmp_path / "live")
    if clean:
        live.close()
        image = live.directory
    else:
        image = crash_image(live.directory, tmp_path / "image")
        live.close()
    bases = segment_bases(image)
    for base in bases[:-1]:
        for suffix in (".index", ".timeindex"):
            path = seg(image, base, suffix)
            if damage == "delete":
                path.unlink()
            elif damage == "truncate":
                os.truncate(path, path.stat().st_size - 3)
            elif damage == "garbage":
                path.write_bytes(os.urandom(path.stat().st_size))
            elif damage == "empty":
                path.write_bytes(b"")
            elif damage == "beyond_file":
                data = bytearray(path.read_bytes())
                data[-4:] = b"\xff\xff\xff\x00"
                path.write_bytes(bytes(data))
    reopen_and_check(image, 120).close()
    for base in bases[:-1]:
        for suffix in (".index", ".timeindex"):
            assert (
                seg(image, base, suffix).read_bytes()
                == seg(reference.directory, base, suffix).read_bytes()
            ), (base, suffix)


def test_clean_marker_with_a_damaged_tail_still_recovers(tmp_path: Path):
    log = build(tmp_path / "live")
    log.close()
    image = log.directory
    assert (image / CLEAN_SHUTDOWN_FILE).exists()
    last = seg(image, segment_bases(image)[-1])
    os.truncate(last, last.stat().st_size - 10)
    reopen_and_check(image, 117).close()


def test_epoch_entries_past_the_recovered_end_are_dropped(tmp_path: Path):
    log = build(tmp_path / "live", 10, epoch=1)
    log.append(make_batch(30, 3, epoch=2))
    assert log.epoch_entries == [(1, 0), (2, 30)]
    image = crash_image(log.directory, tmp_path / "image")
    log.close()
    last = seg(image, segment_bases(image)[-1])
    os.truncate(last, last.stat().st_size - 5)
    again = PartitionLog.open(image, CONFIG)
    assert again.log_end_offset == 30
    assert again.epoch_entries == [(1, 0)]
    assert (image / LEADER_EPOCH_FILE).read_text() == "0\n1\n1 0\n"
    again.close()


@pytest.mark.parametrize("content", [None, "garbage", "0\n5\n1 0\n"])
def test_missing_or_corrupt_epoch_checkpoint_is_rebuilt_from_batches(tmp_path: Path, content):
    log = build(tmp_path / "live", 5, epoch=1)
    for epoch in (3, 3, 4):
        log.append(make_batch(log.log_end_offset, 2, epoch=epoch))
    log.close()
    path = log.directory / LEADER_EPOCH_FILE
    if content is None:
        path.unlink()
    else:
        path.write_text(content)
    again = PartitionLog.open(log.directory, CONFIG)
    assert again.epoch_entries == [(1, 0), (3, 15), (4, 19)]
    again.close()


def test_corrupt_high_watermark_checkpoint_falls_back_to_log_start(tmp_path: Path):
    log = build(tmp_path / "live", 5)
    log.set_high_watermark(9)
    log.close()
    (log.directory / HIGH_WATERMARK_FILE).write_text("zzz")
    again = PartitionLog.open(log.directory, CONFIG)
    assert again.high_watermark == 0
    again.close()


def test_high_watermark_checkpoint_is_clamped_to_the_recovered_end(tmp_path: Path):
    log = build(tmp_path / "live", 5)
    log.set_high_watermark(15)
    log.checkpoint_high_watermark()
    image = crash_image(log.directory, tmp_path / "image")
    log.close()
    last = seg(image, segment_bases(image)[-1])
    os.truncate(last, last.stat().st_size - 5)
    again = PartitionLog.open(image, CONFIG)
    assert (again.log_end_offset, again.high_watermark) == (12, 12)
    # The stale checkpoint (15) is lowered at once: offsets 12..14 written from now on are not
    # committed just because a later crash finds them there.
    assert (image / HIGH_WATERMARK_FILE).read_text() == "0\n12\n"
    again.close()


def test_stray_temp_and_orphan_index_files_are_removed(tmp_path: Path):
    log = build(tmp_path / "live", 5)
    log.close()
    directory = log.directory
    (directory / "high-watermark.tmp").write_text("half")
    seg(directory, 999, ".index").write_bytes(b"")
    seg(directory, 999, ".timeindex").write_bytes(b"")
    again = PartitionLog.open(directory, CONFIG)
    assert sorted(p.name for p in directory.iterdir() if "999" in p.name or ".tmp" in p.name) == []
    again.close()


def test_recovery_after_truncation_crash_does_not_resurrect_the_tail(tmp_path: Path):
    """A crash after a truncation persisted its cut segment but before later segments were
    deleted must not bring the truncated tail back."""
    log = build(tmp_path / "live")
    bases = segment_bases(log.directory)
    saved = tmp_path / "saved"
    saved.mkdir()
    for base in bases[3:]:
        shutil.copy(seg(log.directory, base), saved)
    log.truncate_to(bases[2] + 4)  # inside segment 2: its tail and segments 3.. go
    image = crash_image(log.directory, tmp_path / "image")
    log.close()
    for path in saved.iterdir():  # the deletions "did not happen"
        shutil.copy(path, image)
    reopen_and_check(image, bases[2] + 3).close()
