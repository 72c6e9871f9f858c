"""A small tmpfs really fills: after ``fill_disk`` a write fails with ENOSPC, after
``free_disk`` it succeeds; the mount is removed whatever the test does."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.jepsen.full_disk import TmpfsMount, TmpfsUnavailableError, fill_disk, free_disk

SMALL_DISK_BYTES = 2 * 1024 * 1024


def _mount_or_skip(path: Path) -> TmpfsMount:
    """A small tmpfs mounted at ``path``; the test skips where tmpfs cannot be mounted (no
    root), since there is then no real disk to fill."""
    disk = TmpfsMount(path, SMALL_DISK_BYTES)
    try:
        disk.mount()
    except TmpfsUnavailableError as exc:
        pytest.skip(f"no tmpfs here: {exc}")
    return disk


@pytest.fixture
def small_disk(temp_dir: Path) -> Iterator[Path]:
    disk = _mount_or_skip(temp_dir / "disk")
    try:
        yield disk.path
    finally:
        disk.unmount()


def test_fill_then_free(small_disk: Path) -> None:
    fill_disk(small_disk)
    assert os.statvfs(small_disk).f_bavail == 0
    with pytest.raises(OSError) as raised:
        (small_disk / "one-more").write_bytes(b"x" * 4096)
    assert raised.value.errno == errno.ENOSPC

    free_disk(small_disk)
    (small_disk / "one-more").write_bytes(b"x" * 4096)


def test_unmount_leaves_the_directory_unmounted(temp_dir: Path) -> None:
    disk = _mount_or_skip(temp_dir / "disk")
    try:
        assert os.path.ismount(disk.path)
    finally:
        disk.unmount()
    assert not os.path.ismount(disk.path)
    disk.unmount()  # idempotent
