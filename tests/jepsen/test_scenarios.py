"""Every hand-written scenario in both configurations (``make jepsen``; slow).

Safe (fsync always, min ISR 2, no unclean election): the run must be valid, with records
acknowledged. Unsafe (fsync never, min ISR 1, the operator's unclean election): a scenario
whose fault can lose acknowledged records there must show the checker finding the loss,
proof that a valid safe run is not a blind checker's verdict. Every run appends its row to
``runs.jsonl`` in the results directory, which ``python -m tests.support.jepsen.table`` turns into
docs/faults.md's table.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.jepsen.conftest import jepsen_seed
from tests.support.jepsen.runner import RunOutcome, Scenario, run_scenario
from tests.support.jepsen.scenarios_network import NETWORK_SCENARIOS
from tests.support.jepsen.scenarios_process import PROCESS_SCENARIOS

pytestmark = [pytest.mark.fault, pytest.mark.slow]

SCENARIO_TIMEOUT_S = 900
SCENARIOS = [*NETWORK_SCENARIOS, *PROCESS_SCENARIOS]
CASES = [
    pytest.param(scenario, unsafe, id=f"{scenario.name}-{'unsafe' if unsafe else 'safe'}")
    for scenario in SCENARIOS
    for unsafe in (False, True)
]


@pytest.mark.timeout(SCENARIO_TIMEOUT_S)
@pytest.mark.parametrize(("scenario", "unsafe"), CASES)
async def test_scenario(
    scenario: Scenario, unsafe: bool, temp_dir: Path, jepsen_results: Path
) -> None:
    seed = jepsen_seed()
    print(f"{scenario.name} seed={seed} unsafe={unsafe}: {scenario.invariant}")
    outcome = await run_scenario(scenario, temp_dir, jepsen_results, unsafe=unsafe, seed=seed)
    result = outcome.result
    assert result.acknowledged > 0, _failure("nothing acknowledged", outcome)
    if not unsafe:
        assert result.valid, _failure(f"invariant broken: {scenario.invariant}", outcome)
    elif scenario.unsafe_loses:
        assert result.lost > 0 or not result.valid, _failure(
            "the unsafe configuration lost nothing the checker could see", outcome
        )


def _failure(what: str, outcome: RunOutcome) -> str:
    config = "unsafe" if outcome.unsafe else "safe"
    return (
        f"{outcome.scenario} ({config}, seed {outcome.seed}): {what}\n"
        f"{outcome.result.summary()}\n"
        f"report: {outcome.report_dir}\n"
        f"replay: LIFTLOG_JEPSEN_SEED={outcome.seed} .venv/bin/pytest "
        f"tests/jepsen/test_scenarios.py -k '{outcome.scenario}-{config}'"
    )
