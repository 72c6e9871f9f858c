"""One documentation session: a working directory, a network namespace, background
processes started by the docs, and one Python session.

The working directory looks like the checkout: a symlink to each top-level file and folder git
tracks (``docs/``, ``Makefile``, ...) and to ``.venv``, so ``.venv/bin/liftlog`` and paths
such as ``docs/examples/standalone.toml`` resolve as they do there, while what the docs
create (``./liftlog-data``) lands in a fresh directory. Every command
runs in a private network namespace (``unshare -n`` and ``nsenter``: root on Linux): the docs
use the default ports (4222, 2181, 9644) exactly as written, and no other test or service on
the machine can collide with them. Without namespaces the session runs on the host's network
if those ports are free, and is skipped otherwise.

Every process the session starts ends with it; ``close`` checks that nothing is left in the
namespace after the background processes were stopped with SIGINT (Ctrl-C).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from liftlog.embedded.parent_death import popen_dying_with_parent
from liftlog.embedded.ports import port_is_free
from tests.support.docs.blocks import REPO
from tests.support.waiting import wait_for

DEFAULT_PORTS = (4222, 2181, 9644)
COMMAND_TIMEOUT_S = 240.0
READY_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 60.0
READY_PREFIX = "ready"
_BIND_CHECK = "python3 -c 'import socket; socket.create_server((\"127.0.0.1\", 0))'"
# the environment of a fresh shell: nothing the test run itself set for Liftlog or Spark
_DROPPED_ENV = ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH", "VIRTUAL_ENV")


class SessionUnavailableError(Exception):
    """The session cannot run here (no namespaces and the default ports are taken)."""


class Background:
    """A long-running command (``... # Ctrl-C stops everything``), its output collected."""

    def __init__(self, proc: subprocess.Popen[str], command: str) -> None:
        self.proc = proc
        self.command = command
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.output: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.output.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Block until the process prints its ``ready`` line (or fail if it exits first)."""
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"{self.command!r}: not ready after {timeout_s:.0f}s")
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(
                    f"{self.command!r} exited ({self.proc.wait()}) before it was ready:\n"
                    + "".join(self.output)
                )
            if line.startswith(READY_PREFIX):
                return


class DocSession:
    def __init__(self) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="liftlog-docs-"))
        for name in _checkout_entries():
            (self.workdir / name).symlink_to(REPO / name)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("LIFTLOG_")}
        for name in _DROPPED_ENV:
            self.env.pop(name, None)
        self.env["PATH"] = os.pathsep.join(
            p for p in self.env.get("PATH", "").split(os.pathsep) if not p.startswith(str(REPO))
        )
        self.background: list[Background] = []
        self._holder: subprocess.Popen[bytes] | None = None
        self._python: subprocess.Popen[str] | None = None
        self._replies: TextIO | None = None
        self._enter_namespace()

    # -- the network namespace --------------------------------------------------------

    def _enter_namespace(self) -> None:
        if shutil.which("unshare") and shutil.which("nsenter") and os.geteuid() == 0:
            holder = subprocess.Popen(
                ["unshare", "-n", "sh", "-c", "ip link set lo up 2>/dev/null; exec cat"],
                stdin=subprocess.PIPE,
            )
            self._holder = holder
            try:
                wait_for(
                    lambda: _net_ns(holder.pid) != _net_ns(os.getpid()) or holder.poll(),
                    message="the network namespace",
                )
            except AssertionError:
                self._holder = None
            if holder.poll() is None and self._holder is not None and self._run_in_ns(_BIND_CHECK):
                return
            self._stop_holder()
        busy = [port for port in DEFAULT_PORTS if not port_is_free("127.0.0.1", port)]
        if busy:
            raise SessionUnavailableError(
                f"no network namespace (needs root, unshare, nsenter) and ports {busy} are taken"
            )

    def _run_in_ns(self, command: str) -> bool:
        result = subprocess.run(self._argv(["bash", "-c", command]), capture_output=True)
        return result.returncode == 0

    def _argv(self, argv: list[str]) -> list[str]:
        if self._holder is None:
            return argv
        return ["nsenter", "-t", str(self._holder.pid), "-n", "--", *argv]

    def _stop_holder(self) -> None:
        if self._holder is not None:
            assert self._holder.stdin is not None
            self._holder.stdin.close()
            self._holder.wait(timeout=10)
            self._holder = None

    # -- commands ---------------------------------------------------------------------

    def run(self, command: str, timeout_s: float = COMMAND_TIMEOUT_S) -> tuple[int, str, str]:
        """Run one documented command with bash in the working directory:
        (status, stdout, stderr)."""
        try:
            result = subprocess.run(
                self._argv(["bash", "-c", command]),
                cwd=self.workdir,
                env=self.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
        except subprocess.TimeoutExpired as exc:
            out = exc.output.decode() if isinstance(exc.output, bytes) else exc.output or ""
            return -1, out, f"[timed out after {timeout_s:.0f}s]"
        return result.returncode, result.stdout, result.stderr

    def start(self, command: str) -> Background:
        """Start a long-running documented command in its own process group, as a terminal
        runs a foreground job, and wait until it says it is ready. The kernel kills it if this
        process dies first (``popen_dying_with_parent``): a killed test run leaves no stack."""
        proc: subprocess.Popen[str] = popen_dying_with_parent(  # type: ignore[assignment]
            self._argv(["bash", "-c", command]),
            cwd=self.workdir,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        job = Background(proc, command)
        self.background.append(job)
        job.wait_ready()
        return job

    # -- Python -----------------------------------------------------------------------

    def python(
        self, code: str, name: str, timeout_s: float = COMMAND_TIMEOUT_S
    ) -> dict[str, object]:
        """Run a Python block in the session's interpreter; ``{"ok", "stdout", "error"}``."""
        if self._python is None:
            read_fd, write_fd = os.pipe()
            self._python = subprocess.Popen(
                self._argv(
                    [
                        str(self.workdir / ".venv/bin/python"),
                        str(REPO / "tests/support/docs/worker.py"),
                        str(write_fd),
                    ]
                ),
                cwd=self.workdir,
                env=self.env,
                stdin=subprocess.PIPE,
                text=True,
                pass_fds=(write_fd,),
            )
            os.close(write_fd)
            self._replies = os.fdopen(read_fd)
        assert self._python.stdin is not None
        self._python.stdin.write(json.dumps({"code": code, "name": name}) + "\n")
        self._python.stdin.flush()
        answer: list[str] = []
        replies = self._replies
        assert replies is not None
        reader = threading.Thread(target=lambda: answer.append(replies.readline()), daemon=True)
        reader.start()
        reader.join(timeout_s)
        if not answer or not answer[0]:
            self._python.kill()
            self._python.wait()
            self._python = None
            return {"ok": False, "stdout": "", "error": f"no answer after {timeout_s:.0f}s"}
        return json.loads(answer[0])

    # -- the end ----------------------------------------------------------------------

    def close(self) -> list[str]:
        """Stop the Python session, then every background command with SIGINT (Ctrl-C);
        return what went wrong: a command that did not stop, processes left behind."""
        problems: list[str] = []
        if self._python is not None:
            assert self._python.stdin is not None
            self._python.stdin.close()
            try:
                self._python.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                problems.append("the Python session did not end when its input closed")
                self._python.kill()
                self._python.wait()
        for job in reversed(self.background):
            if job.proc.poll() is not None:
                problems.append(
                    f"{job.command!r} had exited ({job.proc.returncode}) before Ctrl-C:\n"
                    + "".join(job.output[-40:])
                )
                continue
            os.killpg(job.proc.pid, signal.SIGINT)
            try:
                job.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                problems.append(f"{job.command!r} still running {STOP_TIMEOUT_S:.0f}s after Ctrl-C")
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(job.proc.pid, signal.SIGKILL)
                job.proc.wait()
        left = self._leftovers()
        if left:
            problems.append(f"processes left running after Ctrl-C: {list(left.values())}")
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        self._stop_holder()
        shutil.rmtree(self.workdir, ignore_errors=True)
        return problems

    def _leftovers(self) -> dict[int, str]:
        """Processes still in the namespace (or in a background job's process group)."""

        def find() -> dict[int, str]:
            found: dict[int, str] = {}
            ns = _net_ns(self._holder.pid) if self._holder is not None else None
            groups = {job.proc.pid for job in self.background}
            for pid in _pids():
                if self._holder is not None and pid == self._holder.pid:
                    continue
                try:
                    same_ns = ns is not None and _net_ns(pid) == ns
                    in_group = os.getpgid(pid) in groups
                except (OSError, ProcessLookupError):
                    continue
                if same_ns or in_group:
                    found[pid] = f"{pid} {_cmdline(pid)}"
            return found

        with contextlib.suppress(AssertionError):
            wait_for(lambda: not find(), timeout_s=10, message="no processes left")
        return find()


def _checkout_entries() -> list[str]:
    tracked = subprocess.run(
        ["git", "-C", str(REPO), "ls-files"], capture_output=True, text=True, check=True
    ).stdout.split()
    names = {path.split("/", 1)[0] for path in tracked} | {".venv"}
    return sorted(name for name in names if (REPO / name).exists())


def _pids() -> Iterator[int]:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            yield int(entry)


def _net_ns(pid: int) -> str:
    return os.readlink(f"/proc/{pid}/ns/net")


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]
    except OSError:
        return "?"
