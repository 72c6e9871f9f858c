"""Children that die with their parent, whatever kills the parent.

An ``atexit`` hook stops children when the parent exits normally, but nothing runs in a
process that is SIGKILLed (the OOM killer, ``kill -9``, a CI time-out). On Linux the kernel can
send a signal to a child when its parent goes away (``PR_SET_PDEATHSIG``), which closes that
hole without any cooperation from nats-server or the JVM; the setting survives ``execve``.

It is set by util-linux's ``setpriv --pdeathsig KILL`` (always present on Linux distributions:
util-linux is essential), which then executes the real command. The setting comes some
milliseconds after the fork: a parent killed in between (a ``kill -9`` while the stack starts
or restarts a component) leaves a child that is never signalled, and was seen to leave
nats-server running. So setpriv does not execute the command directly but ``/bin/sh``, which
compares its parent (``$PPID``, read after the setting took effect) with the PID of the
process that spawned it: if they differ the spawner is already gone and the child exits
instead of executing the command; if they match, any later death of the spawner is signalled.

Setting it from Python in a ``preexec_fn`` instead would force ``subprocess`` to fork the whole
interpreter and run its fork handlers in the child, which in a process that also drives Spark
through py4j was seen to lose the session's Python data sources.

The kernel ties the signal to the *thread* that forked the child, not to the process: a child
spawned from a short-lived worker thread (``asyncio.to_thread``) would be killed when that
thread ends. So every spawn goes through one spawner thread that lives as long as the process:
a daemon thread, because the interpreter joins (ends) executor and other non-daemon threads at
shutdown before ``atexit`` hooks run, which would kill the children before anything could stop
them in order.
"""

from __future__ import annotations

import errno
import os
import queue
import shutil
import subprocess
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any, NamedTuple

PARENT_DEATH_SIGNAL = "KILL"
SHELL = "/bin/sh"
# Run by the child after setpriv: $1 is the spawner's PID, the rest the real command.
PARENT_CHECK = (
    '[ "$PPID" = "$1" ] || { echo "parent $1 died before this child started" >&2; exit 1; }; '
    'shift; exec "$@"'
)
# What Popen raises for a command that cannot start; the spawner must outlive all of them.
POPEN_ERRORS = (OSError, ValueError, TypeError, subprocess.SubprocessError)
SETPRIV = shutil.which("setpriv")


class _SpawnRequest(NamedTuple):
    """What the spawner thread is asked: start ``argv``, hand the process to ``result``."""

    argv: list[str]
    kwargs: dict[str, Any]  # Popen's, as given: typeshed types them by overloads, not forwardable
    result: Future[subprocess.Popen[bytes]]


_requests: queue.Queue[_SpawnRequest] = queue.Queue()
_spawner_lock = threading.Lock()
_spawner: threading.Thread | None = None


def dying_with_parent(argv: Sequence[str]) -> list[str]:
    """``argv`` run so that the kernel kills it when its parent (this process) dies, and
    not run at all if this process is gone before the setting took effect (unchanged where
    ``setpriv`` is missing: then only the ``atexit`` hook and explicit stops remain)."""
    if SETPRIV is None:
        return list(argv)
    program = shutil.which(argv[0])
    if program is None:  # said here, not by setpriv after the start looked successful
        raise FileNotFoundError(errno.ENOENT, "no such program", argv[0])
    spawner = str(os.getpid())
    check = [SHELL, "-c", PARENT_CHECK, "parent-check", spawner]
    return [SETPRIV, f"--pdeathsig={PARENT_DEATH_SIGNAL}", "--", *check, program, *argv[1:]]


def _serve_spawns() -> None:
    while True:
        argv, kwargs, result = _requests.get()
        try:
            result.set_result(subprocess.Popen(argv, **kwargs))
        except POPEN_ERRORS as exc:  # handed to the caller, who raises it
            result.set_exception(exc)


def _ensure_spawner() -> None:
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            _spawner = threading.Thread(target=_serve_spawns, name="liftlog-spawner", daemon=True)
            _spawner.start()


def popen_dying_with_parent(argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen`` whose child is SIGKILLed by the kernel when this process dies
    (``kwargs``: Popen's, passed through as they are)."""
    _ensure_spawner()
    result: Future[subprocess.Popen[bytes]] = Future()
    _requests.put(_SpawnRequest(dying_with_parent(argv), kwargs, result))
    return result.result()
