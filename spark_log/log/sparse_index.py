"""The shared machinery of the offset and time indexes: sorted pairs in memory, a file on disk.

Lookups are served from two ``array('q')`` columns (bisect, no syscalls); the file exists so a
clean restart does not have to rescan segments. New entries are buffered and appended to the
file when the segment is sealed or the log is closed: an index is an optimisation, and the
index of any segment that might be stale (at or after the recovery point) is rebuilt anyway.
"""

from __future__ import annotations

import itertools
import os
import struct
from array import array
from pathlib import Path
from typing import ClassVar

from spark_log.errors import StorageError
from spark_log.log.layout import FILE_MODE

UINT32_MAX = 2**32 - 1


class SparseIndex:
    """Sorted (key, value) entries of one segment; subclasses fix the file encoding."""

    ENTRY: ClassVar[struct.Struct]

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.keys = array("q")
        self.values = array("q")
        self._pending = bytearray()
        self._rewrite = True

    def __len__(self) -> int:
        return len(self.keys)

    def append(self, key: int, value: int) -> None:
        self._pending += self.encode(key, value)
        self.values.append(value)
        self.keys.append(key)

    def truncate(self, count: int) -> None:
        """Keep the first ``count`` entries; the file is rewritten at the next persist."""
        if count < len(self.keys):
            del self.keys[count:]
            del self.values[count:]
            self._rewrite = True

    def clear(self) -> None:
        """Forget every entry; the file is rewritten (emptied) at the next persist."""
        self.truncate(0)
        self._pending.clear()
        self._rewrite = True

    def encode(self, key: int, value: int) -> bytes:
        raise NotImplementedError

    def decode(self, raw_key: int, raw_value: int) -> tuple[int, int]:
        raise NotImplementedError

    def load(self) -> bool:
        """Read the file into memory; False if it is missing or its size is not whole entries."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise StorageError(f"cannot read index {self.path}: {exc}") from exc
        if len(data) % self.ENTRY.size:
            return False
        self.keys = array("q")
        self.values = array("q")
        for raw_key, raw_value in self.ENTRY.iter_unpack(data):
            key, value = self.decode(raw_key, raw_value)
            self.keys.append(key)
            self.values.append(value)
        self._pending.clear()
        self._rewrite = False
        return True

    def persist(self, fsync: bool) -> None:
        """Bring the file up to date with memory (append pending entries, or rewrite it)."""
        if not self._rewrite and not self._pending:
            return
        if self._rewrite:
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
            data = b"".join(self.encode(k, v) for k, v in zip(self.keys, self.values, strict=True))
        else:
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
            data = bytes(self._pending)
        try:
            fd = os.open(self.path, flags, FILE_MODE)
            try:
                _write_all(fd, data)
                if fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            self._rewrite = True  # part of the entries may be in the file: rewrite it next time
            raise StorageError(f"cannot write index {self.path}: {exc}") from exc
        self._pending.clear()
        self._rewrite = False

    def delete_file(self) -> None:
        self.path.unlink(missing_ok=True)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def strictly_increasing(values: array[int]) -> bool:
    return all(a < b for a, b in itertools.pairwise(values))


def non_decreasing(values: array[int]) -> bool:
    return all(a <= b for a, b in itertools.pairwise(values))
