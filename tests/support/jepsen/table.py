"""The scenario table of docs/faults.md, built from a results directory.

    .venv/bin/python -m tests.support.jepsen.table RESULTS_DIR

reads ``runs.jsonl`` (one row per checked run, written by ``runner.run_scenario``) and
``random.jsonl`` (one row per randomized run, written by ``test_random``), and prints one
markdown row per scenario and configuration (safe, then unsafe) with its counts summed over
its runs, then the longest randomized run with its seed. The table is rebuilt from the rows,
never edited by hand, so the numbers in the docs are the ones a run produced.

    .venv/bin/python -m tests.support.jepsen.table --scenarios

prints the hand-written scenarios with their invariants, the list docs/faults.md shows.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from spark_log.errors import LiftlogError
from tests.support.jepsen.runner import RESULTS_FILE

RANDOM_FILE = "random.jsonl"
SCENARIOS_OPTION = "--scenarios"
USAGE = "usage: python -m tests.support.jepsen.table RESULTS_DIR | --scenarios"
LIST_WIDTH = 100
CONFIGS = ("safe", "unsafe")
COLUMNS = (
    "scenario", "config", "runs", "invalid runs", "acknowledged", "lost", "duplicated",
    "divergent", "seconds unavailable",
)  # fmt: skip


class TableError(LiftlogError):
    """A results file has a line this module cannot read."""


@dataclass(frozen=True)
class RunRow:
    """One checked run, as ``runner._append_row`` writes it."""

    scenario: str
    config: str
    seed: int
    valid: bool
    acknowledged: int
    lost: int
    duplicated: int
    divergent: int
    seconds_unavailable: float


@dataclass(frozen=True)
class RandomRun:
    """One randomized run: its seed, planned and measured length, steps and verdict."""

    seed: int
    duration_s: float
    """The schedule's planned length (with the seed, what replays it)."""
    seconds: float
    """The whole run as measured: cluster start to verdict."""
    steps: int
    valid: bool
    acknowledged: int
    report_dir: str


def append_random_run(results_dir: Path, run: RandomRun) -> None:
    """One JSON line per randomized run in ``random.jsonl``."""
    results_dir.mkdir(parents=True, exist_ok=True)
    with (results_dir / RANDOM_FILE).open("a") as out:
        out.write(json.dumps(asdict(run)) + "\n")


def read_runs(results_dir: Path) -> list[RunRow]:
    fields = {f.name for f in dataclasses.fields(RunRow)}
    return [RunRow(**row) for row in _rows(results_dir / RESULTS_FILE, fields)]


def read_random_runs(results_dir: Path) -> list[RandomRun]:
    fields = {f.name for f in dataclasses.fields(RandomRun)}
    return [RandomRun(**row) for row in _rows(results_dir / RANDOM_FILE, fields)]


def _rows(path: Path, fields: set[str]) -> Iterable[dict[str, Any]]:
    """The JSON lines of ``path`` (none if it does not exist), each cut to ``fields`` (a
    row may carry more: older readers keep working when a writer adds a column)."""
    if not path.exists():
        return []
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TableError(f"{path}:{number}: not JSON ({exc})") from exc
        if not isinstance(row, dict) or not fields <= set(row):
            raise TableError(f"{path}:{number}: needs the fields {sorted(fields)}")
        rows.append({key: row[key] for key in fields})
    return rows


def scenario_table(rows: Sequence[RunRow]) -> str:
    """The markdown table: scenarios in the order they first ran, safe before unsafe."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for scenario in dict.fromkeys(row.scenario for row in rows):
        for config in CONFIGS:
            runs = [r for r in rows if r.scenario == scenario and r.config == config]
            if runs:
                lines.append(_table_row(scenario, config, runs))
    return "\n".join(lines)


def _table_row(scenario: str, config: str, runs: Sequence[RunRow]) -> str:
    cells = [
        scenario,
        config,
        str(len(runs)),
        str(sum(not r.valid for r in runs)),
        str(sum(r.acknowledged for r in runs)),
        str(sum(r.lost for r in runs)),
        str(sum(r.duplicated for r in runs)),
        str(sum(r.divergent for r in runs)),
        f"{sum(r.seconds_unavailable for r in runs):.1f}",
    ]
    return "| " + " | ".join(cells) + " |"


def longest_random(runs: Sequence[RandomRun]) -> str:
    """The longest randomized run, with what replays it."""
    if not runs:
        return "No randomized run."
    run = max(runs, key=lambda r: r.seconds)
    verdict = "valid" if run.valid else "INVALID"
    return (
        f"Longest randomized run: seed {run.seed}, {run.seconds:.0f} s "
        f"({run.steps} fault steps planned over {run.duration_s:g} s), {verdict}, "
        f"{run.acknowledged} acks=all records acknowledged "
        f"(replay: make jepsen-random SEED={run.seed} DURATION={run.duration_s:g})."
    )


def render(results_dir: Path) -> str:
    """The table and the longest randomized run of ``results_dir``."""
    table = scenario_table(read_runs(results_dir))
    return f"{table}\n\n{longest_random(read_random_runs(results_dir))}"


def scenario_list() -> str:
    """Every hand-written scenario with its invariant, as docs/faults.md lists them (imported
    here, not above: reading a results directory needs no scenario module)."""
    from tests.support.jepsen.scenarios_network import NETWORK_SCENARIOS
    from tests.support.jepsen.scenarios_process import PROCESS_SCENARIOS

    items = []
    for scenario in [*NETWORK_SCENARIOS, *PROCESS_SCENARIOS]:
        loses = "must lose" if scenario.unsafe_loses else "cannot lose"
        head = f"- **{scenario.name}** (publishers: {scenario.publishers}; unsafe {loses}). "
        items.append(textwrap.fill(head + scenario.invariant, LIST_WIDTH, subsequent_indent="  "))
    return "\n".join(items)


def main(argv: Sequence[str]) -> int:
    if list(argv) == [SCENARIOS_OPTION]:
        print(scenario_list())
        return 0
    if len(argv) != 1:
        print(USAGE, file=sys.stderr)
        return 2
    results_dir = Path(argv[0])
    if not (results_dir / RESULTS_FILE).exists():
        print(f"{results_dir}: no {RESULTS_FILE} (no run has written there)", file=sys.stderr)
        return 1
    print(render(results_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
