"""The data-directory lock fails as a typed error (one line from the CLI, no traceback), and a
start that fails in any way, Ctrl-C included, leaves no descriptor holding the lock."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from liftlog.embedded import standalone
from liftlog.embedded.data_dir_lock import LOCK_FILE_NAME, DataDirLock, DataDirLockError
from liftlog.embedded.standalone import Standalone
from spark_log.errors import LiftlogError


def _failing(err: int) -> Callable[..., None]:
    def fail(*_args: object) -> None:
        raise OSError(err, os.strerror(err))

    return fail


def test_a_full_disk_while_recording_the_pid_is_a_typed_error_and_closes_the_fd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "pwrite", _failing(errno.ENOSPC))
    lock = DataDirLock(tmp_path)
    with pytest.raises(DataDirLockError) as raised:
        lock.acquire()
    assert isinstance(raised.value, LiftlogError) and raised.value.code == "data_dir_unusable"
    assert raised.value.errno == errno.ENOSPC
    assert f"cannot write the lock file {tmp_path / LOCK_FILE_NAME}" in raised.value.message
    assert not lock.held
    monkeypatch.undo()
    DataDirLock(tmp_path).check_free()  # the failed attempt's descriptor was closed


def test_a_read_only_file_system_is_a_typed_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = os.open

    def read_only(path: str, *args: int) -> int:
        if Path(path).name == LOCK_FILE_NAME:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real_open(path, *args)

    monkeypatch.setattr(os, "open", read_only)
    with pytest.raises(DataDirLockError, match=r"cannot create the lock file .*Read-only"):
        DataDirLock(tmp_path).acquire()


def test_a_data_dir_that_cannot_be_created_is_a_typed_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(DataDirLockError, match="cannot create the data directory"):
        DataDirLock(blocker / "data").acquire()


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, RuntimeError])
def test_a_start_that_fails_in_any_way_releases_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, interrupt: type[BaseException]
) -> None:
    def fail(_components: object) -> None:
        raise interrupt()

    stack = Standalone(nodes=1, data_dir=tmp_path)
    monkeypatch.setattr(stack, "check_ports", lambda: None)
    monkeypatch.setattr(standalone, "_start_together", fail)
    with pytest.raises(interrupt):
        stack.start()
    DataDirLock(tmp_path).check_free()  # DataDirInUseError if the fd had leaked
