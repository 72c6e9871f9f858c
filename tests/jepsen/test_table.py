"""The scenario table built from a synthetic results directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.docs.blocks import REPO
from tests.support.jepsen.runner import RESULTS_FILE
from tests.support.jepsen.table import (
    RANDOM_FILE,
    RandomRun,
    TableError,
    append_random_run,
    main,
    read_random_runs,
    render,
)


def _run(scenario: str, config: str, seed: int, **counts: object) -> dict[str, object]:
    row: dict[str, object] = {
        "scenario": scenario, "config": config, "seed": seed, "valid": True, "acknowledged": 100,
        "lost": 0, "duplicated": 0, "divergent": 0, "seconds_unavailable": 1.25,
    }  # fmt: skip
    return {**row, **counts}


def _write(results_dir: Path, rows: list[dict[str, object]]) -> None:
    (results_dir / RESULTS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))


def _random(seed: int, seconds: float) -> RandomRun:
    return RandomRun(seed, 60.0, seconds, 5, True, 900, f"/r/random-safe-{seed}")


def test_one_row_per_scenario_and_configuration_with_sums(tmp_path: Path) -> None:
    _write(
        tmp_path,
        [
            _run("kafka_2013", "unsafe", 1, valid=False, lost=7, seconds_unavailable=2.0),
            _run("kafka_2013", "safe", 2),
            _run("kafka_2013", "safe", 3, acknowledged=50, seconds_unavailable=0.5),
            _run("zombie_leader", "safe", 4, duplicated=1, divergent=2, valid=False),
        ],
    )
    append_random_run(tmp_path, _random(11, 130.4))
    append_random_run(tmp_path, _random(12, 700.0))
    append_random_run(tmp_path, _random(13, 90.0))

    lines = render(tmp_path).splitlines()

    assert lines[0] == (
        "| scenario | config | runs | invalid runs | acknowledged | lost | duplicated "
        "| divergent | seconds unavailable |"
    )
    assert lines[2:5] == [
        "| kafka_2013 | safe | 2 | 0 | 150 | 0 | 0 | 0 | 1.8 |",
        "| kafka_2013 | unsafe | 1 | 1 | 100 | 7 | 0 | 0 | 2.0 |",
        "| zombie_leader | safe | 1 | 1 | 100 | 0 | 1 | 2 | 1.2 |",
    ]
    assert lines[-1].startswith("Longest randomized run: seed 12, 700 s (5 fault steps")
    assert "make jepsen-random SEED=12 DURATION=60" in lines[-1]


def test_random_runs_round_trip(tmp_path: Path) -> None:
    append_random_run(tmp_path, _random(5, 61.0))

    assert read_random_runs(tmp_path) == [_random(5, 61.0)]


def test_an_unreadable_line_is_named(tmp_path: Path) -> None:
    (tmp_path / RANDOM_FILE).write_text('{"seed": 1}\n')

    with pytest.raises(TableError, match=r"random.jsonl:1"):
        read_random_runs(tmp_path)


def test_the_command_prints_the_table_or_says_why_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path)]) == 1
    _write(tmp_path, [_run("power_loss_all", "safe", 9)])

    assert main([str(tmp_path)]) == 0

    printed = capsys.readouterr().out
    assert "| power_loss_all | safe | 1 | 0 | 100 | 0 | 0 | 0 | 1.2 |" in printed
    assert "No randomized run." in printed


def test_the_docs_list_every_scenario_with_its_invariant() -> None:
    """docs/faults.md's list is ``--scenarios``' output: regenerate it when a scenario changes."""
    from tests.support.jepsen.scenarios_network import NETWORK_SCENARIOS
    from tests.support.jepsen.scenarios_process import PROCESS_SCENARIOS

    docs = " ".join((REPO / "docs" / "faults.md").read_text().split())
    missing = [
        s.name
        for s in [*NETWORK_SCENARIOS, *PROCESS_SCENARIOS]
        if f"**{s.name}**" not in docs or " ".join(s.invariant.split()) not in docs
    ]
    assert not missing, f"paste `python -m tests.support.jepsen.table --scenarios` in: {missing}"
