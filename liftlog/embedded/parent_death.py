"""Children that die with their parent, whatever kills the parent.

An ``atexit`` hook stops children when the parent exits normally, but nothing runs in a
process that is SIGKILLed (the OOM killer, ``kill -9``, a CI time-out). On Linux the kernel can
send a signal to a child when its parent goes away (``PR_SET_PDEATHSIG``), which closes that
hole without any cooperation from nats-server or the JVM; the setting survives ``execve``.

It is set by util-linux's ``setpriv --pdeathsig KILL`` (always present on Linux distributions:
util-linux is essential), which then executes the real command. Setting it from Python in a
``preexec_fn`` instead would force ``subprocess`` to fork the whole interpreter and run its
fork handlers in the child, which in a process that also drives Spark through py4j was seen
to lose the session's Python data sources.

The kernel ties the signal to the *thread* that forked the child, not to the process: a child
spawned from a short-lived worker thread (``asyncio.to_thread``) would be killed when that
thread ends. So every spawn goes through one spawner thread that lives as long as the process.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

PARENT_DEATH_SIGNAL = "KILL"
SETPRIV = shutil.which("setpriv")

_spawner_lock = threading.Lock()
_spawner: ThreadPoolExecutor | None = None


def dying_with_parent(argv: Sequence[str]) -> list[str]:
    """``argv`` run so that the kernel kills it when its parent dies (unchanged where
    ``setpriv`` is missing: then only the ``atexit`` hook and explicit stops remain)."""
    if SETPRIV is None:
        return list(argv)
    return [SETPRIV, f"--pdeathsig={PARENT_DEATH_SIGNAL}", "--", *argv]


def _spawner_thread() -> ThreadPoolExecutor:
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            _spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="liftlog-spawner")
        return _spawner


def popen_dying_with_parent(argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen`` whose child is SIGKILLed by the kernel when this process dies."""
    future = _spawner_thread().submit(subprocess.Popen, dying_with_parent(argv), **kwargs)
    return future.result()
