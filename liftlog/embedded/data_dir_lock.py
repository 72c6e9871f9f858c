"""One stack per data directory: an exclusive ``flock`` on ``<data_dir>/.lock``.

Two stacks on one directory would run two nats-servers, two ZooKeepers and two copies of each
node on the same files. The launcher takes the lock before it starts anything and every child
inherits the locked descriptor (``pass_fds``), so the lock is held as long as any process of the
stack lives, not only the launcher: a child that outlived a killed launcher still keeps a new
launcher out instead of sharing its files. The kernel releases the lock when the last holder
exits, whatever ends it, so there is never a stale lock to clean up by hand. The file holds the
launcher's PID, for people; who holds the lock now is read from ``/proc``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from spark_log.errors import LiftlogError

LOCK_FILE_NAME = ".lock"
LOCK_FILE_MODE = 0o644
_PROC = Path("/proc")


class DataDirInUseError(LiftlogError):
    """Another stack (a launcher or a child that outlived it) holds the data directory."""

    code = "data_dir_in_use"

    def __init__(self, data_dir: Path, holders: list[int], recorded: str) -> None:
        who = (
            f"process(es) {', '.join(str(pid) for pid in holders)}"
            if holders
            else f"another process (the launcher recorded pid {recorded or 'unknown'})"
        )
        super().__init__(
            f"data directory {data_dir} is in use: {data_dir / LOCK_FILE_NAME} is locked by "
            f"{who}; stop them, or choose another directory with --data-dir"
        )
        self.data_dir = data_dir
        self.holders = holders


class DataDirLockError(LiftlogError):
    """The data directory or its lock file cannot be created, opened, locked or written
    (read-only file system, full disk, no permission): said as a typed error, so the CLI
    prints one line instead of a traceback, and no stack starts on a directory it cannot use."""

    code = "data_dir_unusable"

    def __init__(self, action: str, path: Path, cause: OSError) -> None:
        reason = cause.strerror or str(cause)
        super().__init__(
            f"cannot {action} {path}: {reason}; make it writable, free some space, or choose "
            "another directory with --data-dir"
        )
        self.path = path
        self.errno = cause.errno


class DataDirLock:
    """The lock on one data directory; ``fd`` is what children must inherit to share it."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.path = data_dir / LOCK_FILE_NAME
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    @property
    def fd(self) -> int | None:
        """The locked descriptor while held (pass it to every child), else None."""
        return self._fd

    def check_free(self) -> None:
        """DataDirInUseError if someone holds the lock; creates nothing (a directory or lock
        file that does not exist cannot be locked), so a refused start leaves no trace."""
        if self.held or not self.path.exists():
            return
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise DataDirLockError("open the lock file", self.path, exc) from exc
        try:
            self._lock_or_raise(fd)
        finally:
            os.close(fd)  # closing drops the probe's lock too

    def acquire(self) -> None:
        """Create the directory if needed, lock it and record this process's PID in it.

        DataDirInUseError if another stack holds it; DataDirLockError if the file system
        refuses (the descriptor is closed first, so a failed start keeps nothing open).
        """
        if self.held:
            return
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DataDirLockError("create the data directory", self.data_dir, exc) from exc
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, LOCK_FILE_MODE)
        except OSError as exc:
            raise DataDirLockError("create the lock file", self.path, exc) from exc
        try:
            self._lock_or_raise(fd)
            _record_pid(fd, self.path)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def release(self) -> None:
        """Close this process's descriptor; the lock is free once no child holds it either."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _lock_or_raise(self, fd: int) -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DataDirInUseError(self.data_dir, self.holders(), _recorded_pid(fd)) from None
        except OSError as exc:  # ENOLCK (a file system without locks), EBADF, ...
            raise DataDirLockError("lock", self.path, exc) from exc

    def holders(self) -> list[int]:
        """PIDs of the processes with the lock file open (only those /proc lets us see)."""
        target = str(self.path.resolve())
        return sorted(
            int(entry.name)
            for entry in _PROC.iterdir()
            if entry.name.isdigit() and int(entry.name) != os.getpid() and _has_open(entry, target)
        )


def _record_pid(fd: int, path: Path) -> None:
    """Write this process's PID into the locked file (ENOSPC or EIO become DataDirLockError)."""
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError as exc:
        raise DataDirLockError("write the lock file", path, exc) from exc


def _has_open(proc: Path, target: str) -> bool:
    """True if process ``proc`` has ``target`` open (False if it vanished or is not ours)."""
    try:
        fds = list((proc / "fd").iterdir())
    except OSError:
        return False
    for fd in fds:
        with contextlib.suppress(OSError):
            if os.readlink(fd) == target:
                return True
    return False


def _recorded_pid(fd: int) -> str:
    """The PID the launcher wrote into the lock file (for the message when /proc is blind)."""
    try:
        return os.pread(fd, 32, 0).decode("ascii", errors="replace").strip()
    except OSError:
        return ""
