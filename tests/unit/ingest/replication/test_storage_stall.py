"""The full-disk stall's rules: which errors are a full disk, and the retry backoff."""

from __future__ import annotations

import errno

import pytest

from coordinator.znodes import PartitionState
from ingest.replication.partition_state import ROLE_LEADER, Partition
from ingest.replication.storage_stall import Backoff, StallEnd, StorageStall, is_out_of_space
from spark_log.errors import StorageError
from spark_log.log.errors import FsyncError


def _storage_error(code: int) -> StorageError:
    try:
        try:
            raise OSError(code, "fails")
        except OSError as exc:
            raise StorageError(f"cannot append: {exc}") from exc
    except StorageError as wrapped:
        return wrapped


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
def test_out_of_space_errors_wrapped_in_a_storage_error_are_recognised(code):
    assert is_out_of_space(_storage_error(code))
    assert is_out_of_space(OSError(code, "bare"))


@pytest.mark.parametrize("code", [errno.EIO, errno.EROFS, errno.EACCES, errno.EFBIG])
def test_other_io_errors_are_not_a_full_disk(code):
    """EFBIG included: a file at its size limit stays there whatever space is freed."""
    assert not is_out_of_space(_storage_error(code))


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
def test_a_failed_fsync_is_never_a_full_disk(code):
    """The kernel may have dropped the pages: retrying once space is back would serve them."""
    fsync_failed = FsyncError("cannot fsync")
    fsync_failed.__cause__ = OSError(code, "No space left on device")
    assert not is_out_of_space(fsync_failed)
    wrapped = StorageError("log append failed")
    wrapped.__cause__ = fsync_failed
    assert not is_out_of_space(wrapped)


def test_only_the_explicit_cause_is_followed_not_the_context():
    """An error raised while handling a full disk is not itself a full disk."""
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError:
            raise StorageError("cleanup failed") from None
    except StorageError as exc:
        assert exc.__context__ is not None
        assert not is_out_of_space(exc)
    unrelated = StorageError("bad checksum")
    unrelated.__context__ = OSError(errno.ENOSPC, "No space left on device")
    assert not is_out_of_space(unrelated)


def test_a_storage_error_without_a_cause_is_not_a_full_disk():
    assert not is_out_of_space(StorageError("log refuses writes"))


def test_backoff_doubles_from_a_tenth_of_a_second_to_its_cap():
    backoff = Backoff(initial_s=0.1, factor=2.0, max_s=5.0)
    delays = [backoff.delay_s(attempt) for attempt in range(9)]
    assert delays == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0, 5.0])


def test_backoff_stays_finite_and_capped_however_long_the_disk_stays_full():
    assert Backoff().delay_s(10_000) == Backoff().max_s
    assert Backoff().delay_s(-3) == Backoff().initial_s


def test_a_failed_retry_counts_and_keeps_the_latest_error():
    stall = StorageStall("first", since_ms=1000)
    stall.retry_failed("second")
    assert (stall.message, stall.since_ms, stall.retries) == ("second", 1000, 1)


def test_a_stall_soon_after_the_last_keeps_backing_off_from_where_it_ended():
    """Space for the probe but not for a cycle: resume, fail at once, stall again. The
    backoff must go on growing instead of restarting at 0.1 s every time."""
    backoff = Backoff(initial_s=0.1, factor=2.0, max_s=5.0)
    assert backoff.first_attempt(None, now_s=100.0) == 0
    ended = StallEnd(at_s=100.0, attempt=3)
    assert backoff.first_attempt(ended, now_s=100.5) == 4
    stall = StorageStall("again", since_ms=0, first_attempt=4)
    assert backoff.delay_s(stall.attempt) == pytest.approx(1.6)
    stall.retry_failed("still")
    assert stall.attempt == 5
    assert backoff.first_attempt(ended, now_s=105.0) == 0, "a cap's length later: afresh"


def _partition() -> Partition:
    """Broker 1 leading s/0 alone."""
    p = Partition(broker_id=1, stream="s", partition=0, min_isr=1, leader_epoch=0, isr=[1])
    state = PartitionState(leader=1, leader_epoch=0, isr=(1,), replicas=(1,), controller_epoch=1)
    assert p.enter(state) == ROLE_LEADER
    return p


def test_a_stalled_partition_refuses_writes_until_it_resumes():
    p = _partition()
    p.stall_for_space("disk full", now_ms=5)
    assert p.storage_stall == StorageStall("disk full", 5)
    assert isinstance(p.write_refusal(), StorageError)
    p.resume_after_stall()
    assert (p.offline_reason, p.storage_stall, p.write_refusal()) == (None, None, None)


def test_another_failure_ends_the_stall_and_stays_offline():
    p = _partition()
    p.stall_for_space("disk full", now_ms=5)
    p.go_offline("fsync failed")
    assert (p.offline_reason, p.storage_stall) == ("fsync failed", None)
