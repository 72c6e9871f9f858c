"""Taking writes again after a full disk, and closing a log that is about to be deleted."""

from __future__ import annotations

import errno
import os

import pytest

from spark_log.errors import StorageError
from spark_log.log.errors import FsyncError
from spark_log.log.layout import CLEAN_SHUTDOWN_FILE, RECOVERY_POINT_FILE, SPACE_PROBE_FILE
from spark_log.log.segment_file import SegmentFile

from .conftest import all_offsets, append_records, make_batch, tiny_config


def _half_written_then_full(self: SegmentFile, buffers: object) -> None:
    os.write(self.fd, b"\x00" * 50)  # half a batch reaches the file
    raise StorageError("disk full") from OSError(errno.ENOSPC, "No space left on device")


def _cannot_truncate(self: SegmentFile, size: int) -> None:
    raise StorageError("cannot truncate") from OSError(errno.ENOSPC, "No space left on device")


def test_resume_cuts_a_half_written_batch_the_undo_could_not(open_log, monkeypatch):
    log = open_log(config=tiny_config(segment_bytes=1 << 20))
    append_records(log, 2)
    size = log.size_bytes
    monkeypatch.setattr(SegmentFile, "append", _half_written_then_full)
    monkeypatch.setattr(SegmentFile, "truncate", _cannot_truncate)
    with pytest.raises(StorageError, match="disk full"):
        log.append(make_batch(6, 2))
    monkeypatch.undo()
    with pytest.raises(StorageError, match="refuses writes"):
        log.append(make_batch(6, 2))
    assert log.directory.joinpath("00000000000000000000.log").stat().st_size == size + 50

    log.resume_writes(4096)

    assert log.directory.joinpath("00000000000000000000.log").stat().st_size == size
    assert not (log.directory / SPACE_PROBE_FILE).exists()
    append_records(log, 1)
    assert all_offsets(log) == list(range(9))


def test_resume_refuses_while_the_disk_is_still_full(open_log, monkeypatch):
    """Only the probe's writes fail (the epoch checkpoint before it is written): the refusal
    is the probe's own, so this fails if the probe is skipped or never reached."""
    log = open_log()
    append_records(log, 1)
    probe = log.directory / SPACE_PROBE_FILE
    probe_fds: set[int] = set()
    real_open, real_write = os.open, os.write

    def recording_open(path: object, flags: int, *args: object) -> int:
        fd = real_open(path, flags, *args)  # type: ignore[arg-type]
        if os.fspath(path) == os.fspath(probe):  # type: ignore[arg-type]
            probe_fds.add(fd)
        return fd

    def no_space_for_the_probe(fd: int, data: bytes) -> int:
        if fd in probe_fds:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "open", recording_open)
    monkeypatch.setattr(os, "write", no_space_for_the_probe)
    with pytest.raises(StorageError, match="no space for 4096 more bytes") as refused:
        log.resume_writes(4096)
    monkeypatch.undo()
    assert probe_fds, "the probe was never written"
    assert isinstance(refused.value.__cause__, OSError)
    assert refused.value.__cause__.errno == errno.ENOSPC
    assert not probe.exists()


def _fsync_fails_with_enospc(fd: int) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_failed_fsync_refuses_writes_and_resuming_for_good(open_log, monkeypatch):
    """Linux may mark the pages a failed fsync could not write clean: a later fsync then
    succeeds without them, so nothing but reopening the log may make it writable again."""
    log = open_log()
    append_records(log, 1)
    monkeypatch.setattr(os, "fdatasync", _fsync_fails_with_enospc)
    with pytest.raises(FsyncError):
        log.flush()
    monkeypatch.undo()  # fsync "works" again, and the disk has space
    with pytest.raises(StorageError, match="refuses writes: an fsync failed"):
        log.append(make_batch(log.log_end_offset, 1))
    with pytest.raises(FsyncError, match="cannot take writes again"):
        log.resume_writes(4096)
    with pytest.raises(StorageError, match="refuses writes"):
        log.append(make_batch(log.log_end_offset, 1))


def test_a_failed_fsync_at_a_roll_refuses_writes_for_good(open_log, monkeypatch):
    log = open_log(config=tiny_config())
    append_records(log, 1)
    monkeypatch.setattr(os, "fdatasync", _fsync_fails_with_enospc)
    with pytest.raises(FsyncError):
        log.roll()
    monkeypatch.undo()
    with pytest.raises(FsyncError):
        log.resume_writes(4096)


def test_retention_still_deletes_while_the_log_refuses_writes(open_log, monkeypatch):
    """A full disk the log's own segments filled is freed by retention, stalled or not."""
    log = open_log(config=tiny_config())
    append_records(log, 20)
    log.set_high_watermark(log.log_end_offset)
    size = log.log_end_offset
    monkeypatch.setattr(SegmentFile, "append", _half_written_then_full)
    monkeypatch.setattr(SegmentFile, "truncate", _cannot_truncate)
    with pytest.raises(StorageError, match="disk full"):
        log.append(make_batch(size, 2))
    monkeypatch.undo()
    with pytest.raises(StorageError, match="refuses writes"):
        log.append(make_batch(size, 2))
    deleted = log.delete_old_segments(retention_ms=None, retention_bytes=None, retention_messages=3)
    assert deleted > 0 and log.log_start_offset > 0


def test_closing_a_log_to_delete_it_writes_nothing(open_log):
    log = open_log()
    append_records(log, 3)
    recovery_point = (log.directory / RECOVERY_POINT_FILE).read_text()
    log.close(clean=False)
    assert not (log.directory / CLEAN_SHUTDOWN_FILE).exists()
    assert (log.directory / RECOVERY_POINT_FILE).read_text() == recovery_point


def test_delete_removes_the_directory_without_a_clean_close(open_log):
    log = open_log()
    append_records(log, 3)
    log.delete()
    assert not log.directory.exists()
