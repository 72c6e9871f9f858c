"""Randomized fault schedules against the safe configuration: nothing acknowledged is lost.

Short mode (in ``make test``): one schedule of ``SHORT_DURATION_S`` of faults. Long mode
(``make jepsen``, marked slow): one schedule of ``LIFTLOG_JEPSEN_DURATION`` seconds (600 by
default) on one cluster, so the faults pile up over one log's life (many epochs, truncations
and restarts) where the short runs each start afresh. Also slow: one unsafe schedule, which
must show the loss its unclean elections cause. Both take ``LIFTLOG_JEPSEN_SEED`` to
replay a schedule (the seed and the duration decide every step) and print the seed, the steps
and the report directory when they fail.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from tests.jepsen.conftest import jepsen_seed
from tests.support.jepsen.runner import RunOutcome, run_scenario
from tests.support.jepsen.schedule import OVERRUN_FACTOR, Schedule
from tests.support.jepsen.table import RandomRun, append_random_run

pytestmark = pytest.mark.fault

SHORT_DURATION_S = 45.0
DURATION_ENV = "LIFTLOG_JEPSEN_DURATION"
DEFAULT_LONG_DURATION_S = 600.0
RUN_OVERHEAD_S = 300.0
"""Beyond the schedule itself: start, first acks, heal, settle, drain and check."""
UNSAFE_DURATION_S = 60.0
LONG_DURATION_S = float(os.environ.get(DURATION_ENV, "").strip() or DEFAULT_LONG_DURATION_S)


def _timeout(duration_s: float) -> int:
    return int(duration_s * OVERRUN_FACTOR + RUN_OVERHEAD_S)


@pytest.mark.timeout(_timeout(SHORT_DURATION_S))
@pytest.mark.slow
async def test_random_schedule_short(temp_dir: Path, jepsen_results: Path) -> None:
    await _random_run(SHORT_DURATION_S, temp_dir, jepsen_results)


@pytest.mark.slow
@pytest.mark.timeout(_timeout(LONG_DURATION_S))
async def test_random_schedule_long(temp_dir: Path, jepsen_results: Path) -> None:
    await _random_run(LONG_DURATION_S, temp_dir, jepsen_results)


@pytest.mark.slow
@pytest.mark.timeout(_timeout(UNSAFE_DURATION_S))
async def test_random_schedule_unsafe_shows_loss(temp_dir: Path, jepsen_results: Path) -> None:
    """The same machinery in the unsafe configuration: a schedule with an unclean election
    must show acknowledged loss, proof that the random runs' checker sees it."""
    schedule = Schedule.from_seed(jepsen_seed(), UNSAFE_DURATION_S, unsafe=True)
    print(schedule)
    outcome = await run_scenario(
        schedule.scenario(), temp_dir, jepsen_results, unsafe=True, seed=schedule.seed
    )
    if schedule.scenario().unsafe_loses:
        result = outcome.result
        assert result.lost > 0 or not result.valid, _failure(schedule, outcome)


async def _random_run(duration_s: float, work_dir: Path, results_dir: Path) -> None:
    """One safe run of a seeded schedule; the schedule is printed first, so even a run that
    raises shows its seed and steps (pytest prints a failed test's output)."""
    schedule = Schedule.from_seed(jepsen_seed(), duration_s, unsafe=False)
    print(schedule)
    started = time.monotonic()
    outcome = await run_scenario(
        schedule.scenario(), work_dir, results_dir, unsafe=False, seed=schedule.seed
    )
    _record(results_dir, schedule, outcome, time.monotonic() - started)
    if not outcome.result.valid:
        _keep_logs(work_dir, outcome.report_dir)
    assert outcome.result.valid and outcome.result.acknowledged > 0, _failure(schedule, outcome)


def _record(results_dir: Path, schedule: Schedule, outcome: RunOutcome, seconds: float) -> None:
    run = RandomRun(
        seed=schedule.seed,
        duration_s=schedule.duration_s,
        seconds=round(seconds, 1),
        steps=len(schedule.steps),
        valid=outcome.result.valid,
        acknowledged=outcome.result.acknowledged,
        report_dir=str(outcome.report_dir),
    )
    append_random_run(results_dir, run)


def _keep_logs(work_dir: Path, report_dir: Path) -> None:
    """Copy the nodes', NATS's and ZooKeeper's logs into the report (the work dir goes)."""
    logs = work_dir / "cluster" / "logs"
    if logs.is_dir():
        shutil.copytree(logs, report_dir / "logs", dirs_exist_ok=True)


def _failure(schedule: Schedule, outcome: RunOutcome) -> str:
    return (
        f"{outcome.result.summary()}\n\n{schedule}\n\n"
        f"report: {outcome.report_dir} (history.json, result.json, replicas.json, "
        f"timeline.json, logs/)\n"
        f"replay: {_replay(schedule)}"
    )


def _replay(schedule: Schedule) -> str:
    """The command that runs ``schedule`` again (its seed and duration decide its steps)."""
    if schedule.unsafe:
        return (
            f"LIFTLOG_JEPSEN_SEED={schedule.seed} .venv/bin/pytest tests/jepsen/test_random.py "
            "-k unsafe"
        )
    return f"make jepsen-random SEED={schedule.seed} DURATION={schedule.duration_s:g}"
