"""An open ``.log`` file shared by the writer thread and reader threads.

Readers snapshot a segment and then ``pread`` outside the log lock, so a segment may be deleted
(retention, truncation) while a reader still holds it. Closing its fd at that moment would let
the kernel hand the same fd number to the next file opened and the reader would silently read
the wrong bytes; so the fd is reference counted and closed by whoever lets go last. An unlinked
file stays readable through an open fd, which is exactly what such a reader needs.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

from spark_log.errors import StorageError
from spark_log.log.errors import FsyncError
from spark_log.log.layout import FILE_MODE

POSIX_IOV_MAX = 1024
IOV_MAX = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else POSIX_IOV_MAX
_OPEN_FLAGS = os.O_RDWR | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)

Buffer = bytes | bytearray | memoryview


class SegmentFile:
    """A reference-counted fd opened for positional reads and appends."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self.fd = fd
        self._refs = 1
        self._lock = threading.Lock()

    @classmethod
    def open(cls, path: Path, *, create: bool) -> SegmentFile:
        """Open an existing segment file, or create a new one (never clobbering an old one)."""
        flags = _OPEN_FLAGS | (os.O_CREAT | os.O_EXCL if create else 0)
        try:
            return cls(path, os.open(path, flags, FILE_MODE))
        except OSError as exc:
            raise StorageError(f"cannot open segment {path}: {exc}") from exc

    # ---------------------------------------------------------------- reference counting

    def retain(self) -> bool:
        """Take a reader reference; False if the file is already closed."""
        with self._lock:
            if self._refs == 0:
                return False
            self._refs += 1
            return True

    def release(self) -> None:
        """Drop a reference (the owner's or a reader's); the last one closes the fd."""
        with self._lock:
            self._refs -= 1
            last = self._refs == 0
        if last:
            os.close(self.fd)

    # ---------------------------------------------------------------- I/O

    def size(self) -> int:
        try:
            return os.fstat(self.fd).st_size
        except OSError as exc:
            raise StorageError(f"cannot stat {self.path}: {exc}") from exc

    def pread(self, size: int, position: int) -> bytes:
        """Exactly ``size`` bytes at ``position`` unless the file is shorter there."""
        try:
            data = os.pread(self.fd, size, position)
            while len(data) < size:
                more = os.pread(self.fd, size - len(data), position + len(data))
                if not more:
                    break
                data += more
        except OSError as exc:
            raise StorageError(f"cannot read {self.path}: {exc}") from exc
        return data

    def append(self, buffers: Sequence[Buffer]) -> None:
        """Append ``buffers`` in one ``writev`` where the kernel takes them all at once."""
        try:
            if len(buffers) == 1:
                _write_all(self.fd, memoryview(buffers[0]))
            else:
                _writev_all(self.fd, buffers)
        except OSError as exc:
            raise StorageError(f"cannot append to {self.path}: {exc}") from exc

    def truncate(self, size: int) -> None:
        try:
            os.ftruncate(self.fd, size)
        except OSError as exc:
            raise StorageError(f"cannot truncate {self.path}: {exc}") from exc

    def fsync(self) -> None:
        """``fdatasync``: data plus the size metadata needed to read it back."""
        try:
            os.fdatasync(self.fd)
        except OSError as exc:
            raise FsyncError(f"cannot fsync {self.path}: {exc}") from exc


def _write_all(fd: int, view: memoryview) -> None:
    while view:
        view = view[os.write(fd, view) :]


def _writev_all(fd: int, buffers: Sequence[Buffer]) -> None:
    """``writev`` in IOV_MAX-sized groups, finishing any short write with plain writes."""
    for start in range(0, len(buffers), IOV_MAX):
        group = buffers[start : start + IOV_MAX]
        written = os.writev(fd, group)
        for buf in group:
            size = len(buf)
            if written >= size:
                written -= size
                continue
            _write_all(fd, memoryview(buf)[written:])
            written = 0
