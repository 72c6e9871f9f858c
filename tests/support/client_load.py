"""A client script that runs until told to stop, followed line by line while it runs.

A failover test needs to see a client's progress as it happens (kill the leader after some
acks, then wait for acks after the kill), so the script prints one JSON line per event and the
test reads them from a thread; a stop file ends it, and its last line is its summary.
"""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

from tests.support.client_scripts import ClientScriptError, parse_result, script_argv, script_env
from tests.support.client_venvs import ClientVenvSpec

STOP_TIMEOUT_S = 30.0


class RunningClient:
    """``script`` running in ``spec``'s venv with ``args`` and a stop file as its last one."""

    def __init__(self, spec: ClientVenvSpec, script: str, stop_file: Path, *args: str) -> None:
        self.script = script
        self.stop_file = stop_file
        self.events: list[dict[str, Any]] = []
        self._lines: list[str] = []
        self._stderr = stop_file.with_suffix(".stderr")
        with self._stderr.open("w") as stderr:
            self._process = subprocess.Popen(
                script_argv(spec, script, *args, str(stop_file)),
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                env=script_env(spec),
            )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            self._lines.append(line)
            self.events.append(json.loads(line))

    def count(self, kind: str) -> int:
        """How many events of ``kind`` (``ack``, ``failure``) the script has printed."""
        return sum(1 for event in list(self.events) if kind in event)

    def stop(self) -> Any:
        """Ask the script to stop and return its summary."""
        self.stop_file.touch()
        try:
            self._process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            self.kill()
            raise ClientScriptError(f"{self.script} did not stop in {STOP_TIMEOUT_S}s") from exc
        self._reader.join(STOP_TIMEOUT_S)
        stderr = self._stderr.read_text()
        return parse_result(self.script, self._process.returncode, "".join(self._lines), stderr)

    def kill(self) -> None:
        """End the script at once (cleanup after a failed test); a no-op once it has exited."""
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()
