"""The shared life cycle of an embedded component: prepare, spawn, wait ready, stop.

NATS, ZooKeeper and an ingest node differ only in their command line, the files they need
before starting and how they say "ready"; everything else (one ChildProcess per incarnation,
cleanup when start-up fails, fault-injection handles) lives here once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Self

from liftlog.embedded.lifecycle import StartStop
from liftlog.embedded.process import DEFAULT_STOP_TIMEOUT_S, ChildProcess
from spark_log.errors import LiftlogError, ProcessStartError


class Component(StartStop, ABC):
    """A restartable component; each ``start`` runs a fresh ChildProcess on the same files."""

    name: str
    log_path: Path
    start_timeout_s: float
    # Descriptors every incarnation inherits: the stack's data-directory lock, so that the
    # lock is held while any process of the stack lives (see data_dir_lock).
    inherited_fds: tuple[int, ...] = ()

    def __init__(self) -> None:
        self._process: ChildProcess | None = None

    @abstractmethod
    def _prepare(self) -> None:
        """Write whatever the process reads at start-up (config files, directories)."""

    @abstractmethod
    def _argv(self) -> list[str]:
        """The command line of the process."""

    @abstractmethod
    def is_ready(self) -> bool:
        """The readiness probe; must answer False (not raise) while starting."""

    def _extra_env(self) -> dict[str, str]:
        """Environment variables added to the parent's for the child."""
        return {}

    def spawn(self) -> ChildProcess:
        """Start the process without waiting (so several components can start in parallel)."""
        if self._process is not None and self._process.is_running():
            raise ProcessStartError(f"{self.name} is already running (pid {self._process.pid})")
        self._prepare()
        self._process = ChildProcess(
            self.name,
            self._argv(),
            self.log_path,
            extra_env=self._extra_env(),
            pass_fds=self.inherited_fds,
        ).start()
        return self._process

    def wait_ready(self, timeout_s: float | None = None) -> None:
        """Wait for readiness; on failure stop the process so nothing is left behind."""
        process = self.process
        try:
            process.wait_ready(self.is_ready, timeout_s or self.start_timeout_s)
        except LiftlogError:
            process.stop()
            raise

    def start(self, timeout_s: float | None = None) -> Self:
        """Spawn and wait until ready."""
        self.spawn()
        self.wait_ready(timeout_s)
        return self

    def stop(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> int | None:
        """SIGTERM then SIGKILL (see ChildProcess.stop); a no-op when not running."""
        if self._process is None:
            return None
        return self._process.stop(timeout_s)

    def terminate(self) -> None:
        """SIGTERM without waiting, so that several components stop at once; ``stop`` then
        waits for each. A no-op when not running."""
        if self._process is not None:
            self._process.terminate()

    def kill(self) -> None:
        """SIGKILL, as in a crash or a power cut (fault tests)."""
        self.process.kill()

    def pause(self) -> None:
        self.process.pause()

    def resume(self) -> None:
        self.process.resume()

    def restart(self, timeout_s: float | None = None) -> Self:
        """Stop (cleanly if it is running) and start again on the same data."""
        self.stop()
        return self.start(timeout_s)

    @property
    def process(self) -> ChildProcess:
        """The current incarnation's process."""
        if self._process is None:
            raise ProcessStartError(f"{self.name} has not been started")
        return self._process

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def label(self) -> str:
        """How reports (restarts, exits) name this component to an operator."""
        return self.name

    def is_running(self) -> bool:
        return self._process is not None and self._process.is_running()
