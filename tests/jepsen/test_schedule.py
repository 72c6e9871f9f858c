"""Schedules from seeds, without a cluster: replayable, printable, and within the vocabulary."""

from __future__ import annotations

import pytest

from tests.support.jepsen.schedule import (
    FAMILIES,
    HOLD_S,
    STEP_ESTIMATE_S,
    Kind,
    Schedule,
    ScheduleError,
    family,
)

SEEDS = range(1, 200)


def test_the_same_seed_gives_the_same_steps_and_another_seed_others() -> None:
    first = Schedule.from_seed(42, 90.0)

    assert Schedule.from_seed(42, 90.0) == first
    assert str(Schedule.from_seed(42, 90.0)) == str(first)
    assert Schedule.from_seed(43, 90.0).steps != first.steps


def test_the_printed_form_names_the_seed_and_numbers_every_step() -> None:
    schedule = Schedule.from_seed(7, 60.0)

    lines = schedule.lines()

    assert lines[0] == "schedule seed=7 duration=60s config=safe"
    assert [line.split(".", 1)[0] for line in lines[1:]] == [
        str(i) for i in range(1, len(schedule.steps) + 1)
    ]
    assert all("{" not in line for line in lines)


def test_steps_fill_the_duration_and_each_window_is_in_bounds() -> None:
    for seed in SEEDS:
        schedule = Schedule.from_seed(seed, 60.0)
        planned = sum(s.hold_s + s.calm_s + STEP_ESTIMATE_S for s in schedule.steps)
        last = schedule.steps[-1]
        assert planned - (last.hold_s + last.calm_s + STEP_ESTIMATE_S) < 60.0 <= planned
        assert all(HOLD_S[0] <= s.hold_s <= HOLD_S[1] for s in schedule.steps)


def test_only_the_unsafe_configuration_elects_uncleanly() -> None:
    def kinds(unsafe: bool) -> set[Kind]:
        return {
            f.kind
            for seed in SEEDS
            for step in Schedule.from_seed(seed, 120.0, unsafe).steps
            for f in step.faults
        }

    assert Kind.UNCLEAN_ELECTION not in kinds(False)
    assert kinds(True) == set(Kind)
    assert kinds(False) == set(Kind) - {Kind.UNCLEAN_ELECTION}


def test_a_combined_step_joins_two_families_network_first() -> None:
    combined = [
        step
        for seed in SEEDS
        for step in Schedule.from_seed(seed, 60.0).steps
        if len(step.faults) > 1
    ]

    assert combined
    for step in combined:
        families = [family(f.kind) for f in step.faults]
        assert len(set(families)) == len(families)
        assert families == sorted(families, key=FAMILIES.index)


def test_a_schedule_needs_a_positive_duration() -> None:
    with pytest.raises(ScheduleError):
        Schedule.from_seed(1, 0.0)


def test_every_unsafe_schedule_can_show_loss() -> None:
    """An unsafe schedule without an unclean election could not lose an acknowledged record,
    so its run would prove nothing about the checker: every seed gets one."""
    for seed in range(40):
        schedule = Schedule.from_seed(seed, 60.0, unsafe=True)
        assert schedule.scenario().unsafe_loses, schedule
        assert schedule == Schedule.from_seed(seed, 60.0, unsafe=True)
