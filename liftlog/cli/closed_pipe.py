"""A reader that stops reading (``liftlog tail orders | head``) ends the command quietly, as it
ends Unix tools: no traceback, and no "Exception ignored" when Python flushes stdout at exit.

A broken pipe elsewhere (a socket) is not the reader's doing, so only a closed stdout counts.
"""

from __future__ import annotations

import os
import select
import sys

EXIT_READER_GONE = 0  # the reader had what it wanted: `set -o pipefail` scripts go on


def stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (the kernel reports an error on it)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _fd, events in poller.poll(0))


def quiet_exit() -> int:
    """Point stdout at /dev/null, so the interpreter's last flush has nowhere to fail, and
    return the exit status of a command whose reader left."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
    return EXIT_READER_GONE
