"""Small text checkpoint files, replaced atomically.

A checkpoint is written to a temp file, fsynced, renamed over the old one and the directory is
fsynced, so after a crash it is either the old or the new version, never a torn mix. Every file
starts with a version line so the format can evolve.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from spark_log.errors import StorageError
from spark_log.log.errors import CheckpointError
from spark_log.log.layout import FILE_MODE, TMP_SUFFIX

CHECKPOINT_VERSION = 0


def fsync_directory(directory: Path) -> None:
    """Make creations, renames and deletions inside ``directory`` durable."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise StorageError(f"cannot open directory {directory}: {exc}") from exc
    try:
        os.fsync(fd)
    except OSError as exc:
        raise StorageError(f"cannot fsync directory {directory}: {exc}") from exc
    finally:
        os.close(fd)


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` via tmp + fsync + rename + directory fsync."""
    tmp = path.with_name(path.name + TMP_SUFFIX)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        try:
            os.write(fd, text.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        raise StorageError(f"cannot write checkpoint {path}: {exc}") from exc
    fsync_directory(path.parent)


def probe_free_space(path: Path, size: int) -> None:
    """Write ``size`` zero bytes to ``path``, fsync and remove it: StorageError unless the
    file system takes that much more now (a check that a full disk has space again)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        try:
            written = 0
            while written < size:
                written += os.write(fd, bytes(min(size - written, _PROBE_CHUNK)))
            os.fsync(fd)
        finally:
            os.close(fd)
            path.unlink(missing_ok=True)
    except OSError as exc:
        raise StorageError(f"no space for {size} more bytes in {path.parent}: {exc}") from exc


_PROBE_CHUNK = 64 * 1024


def write_offset_checkpoint(path: Path, offset: int) -> None:
    write_atomically(path, f"{CHECKPOINT_VERSION}\n{offset}\n")


def read_offset_checkpoint(path: Path) -> int | None:
    """The offset stored in ``path``; None when the file does not exist."""
    lines = _read_lines(path)
    if lines is None:
        return None
    if len(lines) != 2:
        raise CheckpointError(f"{path}: expected 2 lines, found {len(lines)}")
    offset = _parse_int(path, lines[1])
    if offset < 0:
        raise CheckpointError(f"{path}: negative offset {offset}")
    return offset


def write_offset_range_checkpoint(path: Path, start: int, end: int) -> None:
    write_atomically(path, f"{CHECKPOINT_VERSION}\n{start} {end}\n")


def read_offset_range_checkpoint(path: Path) -> tuple[int, int] | None:
    """The ``(start, end)`` offset range stored in ``path``; None when it does not exist."""
    lines = _read_lines(path)
    if lines is None:
        return None
    if len(lines) != 2:
        raise CheckpointError(f"{path}: expected 2 lines, found {len(lines)}")
    start, end = _parse_int_pair(path, lines[1])
    if start > end:
        raise CheckpointError(f"{path}: range {start}..{end} is reversed")
    return start, end


def write_epoch_checkpoint(path: Path, entries: list[tuple[int, int]]) -> None:
    body = "".join(f"{epoch} {start}\n" for epoch, start in entries)
    write_atomically(path, f"{CHECKPOINT_VERSION}\n{len(entries)}\n{body}")


def read_epoch_checkpoint(path: Path) -> list[tuple[int, int]] | None:
    """The (epoch, start_offset) entries in ``path``; None when the file does not exist."""
    lines = _read_lines(path)
    if lines is None:
        return None
    if len(lines) < 2:
        raise CheckpointError(f"{path}: missing count line")
    count = _parse_int(path, lines[1])
    if count != len(lines) - 2:
        raise CheckpointError(f"{path}: count {count} but {len(lines) - 2} entries")
    entries = [_parse_int_pair(path, line) for line in lines[2:]]
    for (e1, s1), (e2, s2) in itertools.pairwise(entries):
        if e2 <= e1 or s2 < s1:
            raise CheckpointError(f"{path}: entries are not increasing")
    return entries


def _read_lines(path: Path) -> list[str] | None:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"cannot read checkpoint {path}: {exc}") from exc
    lines = text.splitlines()
    if not lines or _parse_int(path, lines[0]) != CHECKPOINT_VERSION:
        raise CheckpointError(f"{path}: unknown checkpoint version")
    return lines


def _parse_int_pair(path: Path, line: str) -> tuple[int, int]:
    """Two whitespace-separated non-negative integers (an epoch entry, an offset range)."""
    parts = line.split()
    if len(parts) != 2:
        raise CheckpointError(f"{path}: bad entry {line!r}")
    first, second = _parse_int(path, parts[0]), _parse_int(path, parts[1])
    if first < 0 or second < 0:
        raise CheckpointError(f"{path}: negative value in entry {line!r}")
    return first, second


def _parse_int(path: Path, text: str) -> int:
    try:
        return int(text.strip())
    except ValueError as exc:
        raise CheckpointError(f"{path}: {text!r} is not an integer") from exc
