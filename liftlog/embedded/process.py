"""One child process of the embedded deployment, owned and ended by PID.

Every child runs in its own session (and so its own process group): a Ctrl-C in the terminal
reaches the parent only, which then stops the children in order (nodes before ZooKeeper), and
``stop`` can SIGKILL the whole group so nothing a child forked survives it. Output goes to a log
file, never to a pipe nobody reads (a full pipe blocks the child). Every started child is
tracked so an ``atexit`` hook can SIGKILL leftovers if the parent exits without stopping them,
and the kernel kills every child if the parent itself is killed (``parent_death``).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from liftlog.embedded.parent_death import popen_dying_with_parent
from spark_log.errors import ProcessStartError

DEFAULT_STOP_TIMEOUT_S = 15.0
DEFAULT_READY_POLL_INTERVAL_S = 0.05
KILL_REAP_TIMEOUT_S = 5.0
LOG_TAIL_LINES = 40
LOG_TAIL_MAX_BYTES = 64 * 1024

_live_lock = threading.Lock()
_live: set[ChildProcess] = set()


class ChildProcess:
    """A child process started in its own session, logging to ``log_path``.

    ``start`` spawns it; ``wait_ready`` polls a readiness probe and fails fast if the child
    exits; ``stop`` asks politely (SIGTERM) and then insists (SIGKILL to the group). A
    ChildProcess is one incarnation: to restart, create a new one (the log file is appended to).
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        *,
        extra_env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        pass_fds: Sequence[int] = (),
    ) -> None:
        self.name = name
        self.argv = [str(a) for a in argv]
        self.log_path = Path(log_path)
        self._extra_env = dict(extra_env or {})
        self._cwd = cwd
        self._pass_fds = tuple(pass_fds)  # inherited, e.g. the data directory's lock
        self._popen: subprocess.Popen[bytes] | None = None
        self._term_sent = False

    def start(self) -> ChildProcess:
        """Spawn the child (once); its stdout and stderr are appended to ``log_path``."""
        if self._popen is not None:
            raise ProcessStartError(f"{self.name} was already started (pid {self.pid})")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self._extra_env}
        with self.log_path.open("ab") as log:
            log.write(
                f"\n=== {time.strftime('%Y-%m-%dT%H:%M:%S')} starting: "
                f"{_one_line(self.argv)}\n".encode()
            )
            log.flush()
            try:
                self._popen = popen_dying_with_parent(
                    self.argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    cwd=self._cwd,
                    pass_fds=self._pass_fds,
                    start_new_session=True,
                )
            except OSError as exc:
                raise ProcessStartError(
                    f"cannot start {self.name} ({self.argv[0]}): {exc}"
                ) from exc
        with _live_lock:
            _live.add(self)
        return self

    @property
    def pid(self) -> int:
        """The child's PID, which is also its process group id (it leads its own session)."""
        return self._started().pid

    @property
    def returncode(self) -> int | None:
        """The exit status once the child has exited (negative: killed by that signal)."""
        return self._started().poll()

    def is_running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def wait_ready(
        self,
        probe: Callable[[], bool],
        timeout_s: float,
        interval_s: float = DEFAULT_READY_POLL_INTERVAL_S,
    ) -> None:
        """Poll ``probe`` until it answers True; fail fast, with the log tail, if we exit.

        The probe must not raise for "not yet" (return False instead). Waiting for a condition
        instead of sleeping a fixed time makes start-up as fast as the component allows.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            code = self.returncode
            if code is not None:
                raise ProcessStartError(
                    f"{self.name} (pid {self.pid}) exited with status {code} before it was "
                    f"ready; last lines of {self.log_path}:\n{self.log_tail()}"
                )
            if probe():
                return
            if time.monotonic() >= deadline:
                raise ProcessStartError(
                    f"{self.name} (pid {self.pid}) was not ready after {timeout_s:.1f}s; "
                    f"last lines of {self.log_path}:\n{self.log_tail()}"
                )
            time.sleep(interval_s)

    def terminate(self) -> None:
        """Send SIGTERM to the group once, without waiting (lets callers stop many at once).

        Sent only once: a second SIGTERM makes some servers (uvicorn) abandon their graceful
        shutdown. SIGCONT follows so that a paused child can act on it.
        """
        if self._term_sent or not self.is_running():
            return
        self._term_sent = True
        self._signal_group(signal.SIGTERM)
        self._signal_group(signal.SIGCONT)

    def stop(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> int | None:
        """SIGTERM, wait up to ``timeout_s``, then SIGKILL the whole group; returns the status.

        The final SIGKILL to the group also reaches anything the child forked that outlived
        it. Safe to call on a child that has already exited (or was never started).
        """
        if self._popen is None:
            return None
        self.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._popen.wait(timeout=timeout_s)
        return self.kill()

    def kill(self) -> int | None:
        """SIGKILL the group (an unclean stop, as in a power cut) and reap the child."""
        if self._popen is None:
            return None
        self._signal_group(signal.SIGKILL)
        try:
            code = self._popen.wait(timeout=KILL_REAP_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise ProcessStartError(
                f"{self.name} (pid {self.pid}) did not die after SIGKILL"
            ) from exc
        with _live_lock:
            _live.discard(self)
        return code

    def pause(self) -> None:
        """SIGSTOP the group: the process stays alive but silent (a GC pause, a hung disk)."""
        self._signal_group(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT the group after ``pause``."""
        self._signal_group(signal.SIGCONT)

    def log_tail(self, max_lines: int = LOG_TAIL_LINES) -> str:
        """The last lines of the log file, for error messages."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(0, os.SEEK_END)
                size = log.tell()
                log.seek(max(0, size - LOG_TAIL_MAX_BYTES))
                text = log.read().decode("utf-8", errors="replace")
        except OSError as exc:
            return f"(cannot read {self.log_path}: {exc})"
        return "\n".join(text.splitlines()[-max_lines:])

    def _signal_group(self, sig: signal.Signals) -> None:
        popen = self._started()
        # The group outlives the leader only while a member is alive, so its id cannot have
        # been reused by an unrelated group: signalling it after the leader exited is safe.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(popen.pid, sig)

    def _started(self) -> subprocess.Popen[bytes]:
        if self._popen is None:
            raise ProcessStartError(f"{self.name} has not been started")
        return self._popen

    def __repr__(self) -> str:
        pid = self._popen.pid if self._popen is not None else None
        return f"ChildProcess({self.name!r}, pid={pid})"


def _one_line(argv: list[str]) -> str:
    """The command line for the log header, kept on one line (``-c`` code has newlines)."""
    return " ".join(arg.replace("\n", "\\n") for arg in argv)


def live_children() -> list[ChildProcess]:
    """Children started and not yet stopped or killed (for diagnostics and tests)."""
    with _live_lock:
        return [child for child in _live if child.is_running()]


@atexit.register
def _kill_leftovers() -> None:
    """Last resort when the parent exits without stopping its children: no orphans."""
    for child in live_children():
        child.kill()
