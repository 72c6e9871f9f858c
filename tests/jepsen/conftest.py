"""Where Jepsen runs write their reports, and which seed they use.

``LIFTLOG_JEPSEN_RESULTS`` names the results directory (``make jepsen`` sets it); without it a
session writes into a fresh temporary directory, named at the end of the session so a failed
run's report can be read (and removed when every run in it was valid: ``make test`` would
otherwise leave megabytes of histories behind at every run). ``LIFTLOG_JEPSEN_SEED`` replays
a seed; without it every run draws a fresh one (and names it with its verdict).
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.jepsen.runner import RESULTS_FILE
from tests.support.jepsen.table import read_runs

RESULTS_ENV = "LIFTLOG_JEPSEN_RESULTS"
SEED_ENV = "LIFTLOG_JEPSEN_SEED"
SEED_LIMIT = 2**31

_used_results: list[Path] = []
_removed_results: list[Path] = []


def jepsen_seed() -> int:
    """The replayed seed (``LIFTLOG_JEPSEN_SEED``, empty meaning unset) or a fresh one."""
    configured = os.environ.get(SEED_ENV, "").strip()
    return int(configured) if configured else random.SystemRandom().randrange(1, SEED_LIMIT)


@pytest.fixture(scope="session")
def jepsen_results() -> Iterator[Path]:
    """The session's results directory (created; a temporary one goes if every run passed)."""
    configured = os.environ.get(RESULTS_ENV, "").strip()
    path = Path(configured) if configured else Path(tempfile.mkdtemp(prefix="liftlog-jepsen-"))
    path.mkdir(parents=True, exist_ok=True)
    _used_results.append(path)
    yield path
    if not configured and all(run.valid for run in read_runs(path)):
        shutil.rmtree(path, ignore_errors=True)
        _removed_results.append(path)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Name the results directory and the command that prints its table."""
    for path in _used_results:
        if path in _removed_results:
            terminalreporter.write_line(f"jepsen: every run valid ({path} removed)")
        elif (path / RESULTS_FILE).exists():
            terminalreporter.write_line(
                f"jepsen results in {path}: .venv/bin/python -m tests.support.jepsen.table {path}"
            )
