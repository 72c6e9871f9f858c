"""Failure artefacts and the summary table: what a reader needs without rerunning a scenario.

A run's directory holds the history (every attempt), the checker's JSON, its readable
summary and the drained replicas' metadata; the table row is one line per scenario, so many
runs compare at a glance.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from tests.support.jepsen.history import History
from tests.support.jepsen.replicas import Replicas
from tests.support.jepsen.result import CheckResult

HISTORY_FILE = "history.json"
RESULT_FILE = "result.json"
SUMMARY_FILE = "summary.txt"
REPLICAS_FILE = "replicas.json"
TABLE_COLUMNS = (
    "scenario", "runs", "acknowledged", "lost", "duplicated", "divergent", "seconds unavailable",
)  # fmt: skip


def write_report(
    directory: Path, history: History, result: CheckResult, replicas: Replicas | None = None
) -> Path:
    """Write the artefacts of one run into ``directory`` (created); returns it."""
    directory.mkdir(parents=True, exist_ok=True)
    history.dump(directory / HISTORY_FILE)
    (directory / RESULT_FILE).write_text(result.dumps())
    (directory / SUMMARY_FILE).write_text(result.summary() + "\n")
    if replicas is not None:
        body = {
            str(broker): {str(p): s.to_json() for p, s in sorted(parts.items())}
            for broker, parts in sorted(replicas.items())
        }
        (directory / REPLICAS_FILE).write_text(json.dumps(body, indent=1))
    return directory


def table_header() -> str:
    return "| " + " | ".join(TABLE_COLUMNS) + " |"


def table_row(scenario: str, results: Sequence[CheckResult]) -> str:
    """One line for ``scenario`` over its runs: sums of each count, unavailability summed."""
    cells = [
        scenario,
        str(len(results)),
        str(sum(x.acknowledged for x in results)),
        str(sum(x.lost for x in results)),
        str(sum(x.duplicated for x in results)),
        str(sum(x.divergent for x in results)),
        f"{sum(x.seconds_unavailable for x in results):.2f}",
    ]
    return "| " + " | ".join(cells) + " |"
