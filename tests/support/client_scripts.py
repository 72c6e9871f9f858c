"""Run a script inside a client's venv and read the JSON it prints.

The scripts (tests/integration/liftbridge/clients/) are plain Python files that use a published
client as its users would; they run as child processes with a timeout, and answer on their last
line of stdout with one JSON document the test asserts on. Whatever they logged comes back with
a failure, so a broken RPC shows its status and message in the test's report.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.support.client_venvs import ClientVenvSpec, venv_python

SCRIPTS = Path(__file__).resolve().parents[1] / "integration" / "liftbridge" / "clients"
DEFAULT_SCRIPT_TIMEOUT_S = 60.0


class ClientScriptError(AssertionError):
    """A client script failed: its exit status, stdout and stderr are in the message."""


def script_path(name: str) -> Path:
    return SCRIPTS / name


def script_env(spec: ClientVenvSpec, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a script: this process's (without its venv), the client's own
    settings, then the test's (``extra``)."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    return {**env, "PYTHONUNBUFFERED": "1", **spec.env, **(extra or {})}


def script_argv(spec: ClientVenvSpec, script: str, *args: str) -> list[str]:
    return [str(venv_python(spec)), str(script_path(script)), *args]


def run_client_script(
    spec: ClientVenvSpec,
    script: str,
    *args: str,
    timeout_s: float = DEFAULT_SCRIPT_TIMEOUT_S,
    env: dict[str, str] | None = None,
) -> Any:
    """Run ``script`` with ``args`` in ``spec``'s venv; the JSON of its last stdout line."""
    argv = script_argv(spec, script, *args)
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout_s, env=script_env(spec, env)
        )
    except subprocess.TimeoutExpired as exc:
        raise ClientScriptError(
            f"{script} {' '.join(args)} ran over {timeout_s:.0f}s\n"
            f"stdout: {_text(exc.stdout)}\nstderr: {_text(exc.stderr)[-4000:]}"
        ) from exc
    return parse_result(script, done.returncode, done.stdout, done.stderr)


def parse_result(script: str, returncode: int, stdout: str, stderr: str) -> Any:
    """The JSON answer of a finished script, or a ClientScriptError telling why there is none."""
    lines = stdout.strip().splitlines()
    if returncode != 0 or not lines:
        raise ClientScriptError(
            f"{script} exited {returncode}\nstdout: {stdout[-4000:]}\nstderr: {stderr[-4000:]}"
        )
    try:
        return json.loads(lines[-1])
    except json.JSONDecodeError as exc:
        raise ClientScriptError(
            f"{script} did not answer with JSON: {lines[-1][:500]!r}\nstderr: {stderr[-4000:]}"
        ) from exc


def _text(output: str | bytes | None) -> str:
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""
