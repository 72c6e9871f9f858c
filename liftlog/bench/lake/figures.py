"""What the lake and Spark benchmarks print and save: their common flags, one row per figure
with the median and spread of every column, this process's peak memory, and the JSON file.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
from collections.abc import Sequence
from pathlib import Path

from liftlog.bench.errors import BenchError
from liftlog.bench.lake.pair import LAKE_TITLES
from liftlog.bench.toolkit.json_object import JsonObject
from liftlog.bench.toolkit.spread import Spread
from liftlog.bench.toolkit.table import render_table

DEFAULT_RUNS = 3
_KIB = 1024
_BYTES_PER_MB = 1_000_000


def own_peak_rss_mb() -> float:
    """This process's peak resident set in MB (Linux reports ``ru_maxrss`` in KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * _KIB / _BYTES_PER_MB, 1)


def add_common_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--runs", type=int, default=DEFAULT_RUNS, help=f"runs per figure (default {DEFAULT_RUNS})"
    )
    parser.add_argument("--json", help="also write the results to this file")


def check_runs(runs: int) -> int:
    if runs < 1:
        raise BenchError(f"--runs must be at least 1, got {runs}")
    return runs


def spreads_json(spreads: dict[str, Spread], decimals: int = 3) -> JsonObject:
    return {name: spread.to_json(decimals) for name, spread in spreads.items()}


def figures_table(
    rows: Sequence[tuple[str, dict[str, Spread], int]], columns: dict[str, str] = LAKE_TITLES
) -> str:
    """One row per figure: the median with the spread per column, then every run per column.

    ``rows``: (label, spread per column key, decimals); ``columns``: key -> title (the two
    lakes by default); a column a row lacks shows ``-``."""
    headers = [
        "",
        *[f"{title}, median (min..max)" for title in columns.values()],
        *[f"{key}, each run" for key in columns],
    ]
    body = []
    for label, spreads, decimals in rows:
        medians = [spreads[k].render(decimals) if k in spreads else "-" for k in columns]
        runs = [spreads[k].render_runs(decimals) if k in spreads else "-" for k in columns]
        body.append([label, *medians, *runs])
    return render_table(headers, body)


def load_average() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def write_json(path: str | None, result: JsonObject) -> None:
    if not path:
        return
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(result, indent=2) + "\n")
    print(f"results written to {path}")
