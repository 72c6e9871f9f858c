"""Which broken pipe ends a command quietly: only stdout's, when its reader has gone."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

import pytest

from liftlog.cli.closed_pipe import stdout_closed


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read_fd, write_fd = os.pipe()
    yield read_fd, write_fd
    for fd in (read_fd, write_fd):
        with contextlib.suppress(OSError):  # a test closed it already
            os.close(fd)


def test_a_pipe_whose_reader_left_is_closed(
    pipe: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    read_fd, write_fd = pipe
    monkeypatch.setattr(sys, "stdout", os.fdopen(write_fd, "w", closefd=False))
    assert not stdout_closed()  # a reader is there
    os.close(read_fd)
    assert stdout_closed()


def test_stdout_without_a_descriptor_is_not_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdout", None)
    assert not stdout_closed()
