"""Children that die with their parent, whatever kills the parent.

An ``atexit`` hook stops children when the parent exits normally, but nothing runs in a
process that is SIGKILLed (the OOM killer, ``kill -9``, a CI time-out). On Linux the kernel can
send a signal to a child when its parent goes away (``prctl(PR_SET_PDEATHSIG)``), which closes
that hole without any cooperation from nats-server or the JVM; the setting survives ``execve``.

The kernel ties the signal to the *thread* that forked the child, not to the process: a child
spawned from a short-lived worker thread (``asyncio.to_thread``) would be killed when that
thread ends. So every spawn goes through one spawner thread that lives as long as the process.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PARENT_DEATH_SIGNAL = signal.SIGKILL

_spawner_lock = threading.Lock()
_spawner: ThreadPoolExecutor | None = None


def _load_prctl() -> Callable[..., int] | None:
    """libc's prctl, resolved once in the parent (the forked child must not load libraries)."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    return libc.prctl  # type: ignore[no-any-return]


_PRCTL = _load_prctl()


def _die_with(parent_pid: int) -> Callable[[], None]:
    """The child's pre-exec step: ask for SIGKILL on parent death; quit if it is already gone."""
    prctl = _PRCTL

    def arm() -> None:
        if prctl is None:
            return
        prctl(PR_SET_PDEATHSIG, int(PARENT_DEATH_SIGNAL), 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died between fork and prctl
            os._exit(1)

    return arm


def _spawner_thread() -> ThreadPoolExecutor:
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            _spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="liftlog-spawner")
        return _spawner


def popen_dying_with_parent(argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen`` whose child is SIGKILLed by the kernel when this process dies."""
    arm = _die_with(os.getpid())
    future = _spawner_thread().submit(subprocess.Popen, argv, preexec_fn=arm, **kwargs)
    return future.result()
