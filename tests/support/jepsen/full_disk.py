"""A full disk on demand: a small tmpfs as a node's data directory, filled to ENOSPC.

A tmpfs of a few MiB is a real filesystem with a real limit, so ``fill_disk`` makes the node's
next write fail with ENOSPC exactly as a full volume would, and ``free_disk`` gives the space
back. Mounting needs root (or CAP_SYS_ADMIN); where it is not permitted, ``TmpfsUnavailableError``
says why, and tests skip with that reason. The mount is removed only after the node's process
is gone (a mount in use cannot be unmounted cleanly), by the cluster's ``stop``.
"""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

from spark_log.errors import LiftlogError

FILLER_NAME = "jepsen-disk-filler"
# large writes first, then smaller ones, so the filesystem is full to the last page
FILL_CHUNK_SIZES = (1024 * 1024, 64 * 1024, 4096, 512, 1)
MOUNT_TIMEOUT_S = 10.0


class TmpfsUnavailableError(LiftlogError):
    """This machine does not let the test mount a tmpfs (no root, no mount binary, ...)."""


class TmpfsMount:
    """A tmpfs of ``size_bytes`` mounted at ``path`` (created if missing)."""

    def __init__(self, path: Path, size_bytes: int) -> None:
        self.path = path
        self.size_bytes = size_bytes
        self.mounted = False

    def mount(self) -> None:
        """Mount it; TmpfsUnavailableError (with the reason) when this machine does not allow it."""
        if os.geteuid() != 0:
            raise TmpfsUnavailableError("mounting a tmpfs needs root")
        self.path.mkdir(parents=True, exist_ok=True)
        _run(["mount", "-t", "tmpfs", "-o", f"size={self.size_bytes}", "tmpfs", str(self.path)])
        self.mounted = True

    def unmount(self) -> None:
        """Unmount (lazily if something still holds it); a no-op when not mounted."""
        if not self.mounted:
            return
        try:
            _run(["umount", str(self.path)])
        except TmpfsUnavailableError:
            _run(["umount", "-l", str(self.path)])  # detached now, freed when released
        self.mounted = False


def fill_disk(directory: Path) -> Path:
    """Write a filler file in ``directory`` until its filesystem answers ENOSPC; returns it."""
    filler = directory / FILLER_NAME
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for size in FILL_CHUNK_SIZES:
            chunk = b"\0" * size
            while _write_fits(fd, chunk):
                pass
    finally:
        os.close(fd)
    return filler


def free_disk(directory: Path) -> None:
    """Remove the filler: the space is back at once (tmpfs frees on unlink)."""
    (directory / FILLER_NAME).unlink(missing_ok=True)


def _write_fits(fd: int, chunk: bytes) -> bool:
    """Write ``chunk`` whole; False once the filesystem is full (a partial write counts)."""
    try:
        return os.write(fd, chunk) == len(chunk)
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            return False
        raise


def _run(argv: list[str]) -> None:
    try:
        result = subprocess.run(
            argv, capture_output=True, text=True, timeout=MOUNT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TmpfsUnavailableError(f"{' '.join(argv)}: {exc}") from exc
    if result.returncode != 0:
        raise TmpfsUnavailableError(f"{' '.join(argv)}: {result.stderr.strip()}")
