"""The restart policy of ``liftlog standalone``: exponential, bounded backoff for any
component (nodes always; NATS, ZooKeeper and SeaweedFS servers with ``--ha``), reported in
words an operator can act on. The components here are stand-ins with a fake clock: no process
is started."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from liftlog.embedded.component import Component
from liftlog.embedded.restarts import (
    RESTART_INITIAL_BACKOFF_S,
    RESTART_MAX_BACKOFF_S,
    RESTART_RESET_AFTER_S,
    ComponentRestarter,
    restart_delay_s,
)
from liftlog.embedded.standalone import Standalone
from spark_log.errors import ProcessStartError

FIRST_PID = 4242


def test_backoff_doubles_from_the_initial_delay_up_to_the_maximum():
    delays = [restart_delay_s(n) for n in range(1, 12)]
    assert delays[:3] == [RESTART_INITIAL_BACKOFF_S, 2 * RESTART_INITIAL_BACKOFF_S, 4.0]
    assert delays == sorted(delays)
    assert max(delays) == RESTART_MAX_BACKOFF_S


@dataclass
class Incarnation:
    """What ComponentRestarter reads of a process: its pid and exit status."""

    pid: int
    returncode: int | None = None


class StandIn(Component):
    """A component whose process is a record: ``crash`` ends it, ``spawn`` makes a new one
    (or fails, when told to)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.log_path = Path(f"/logs/{name}.log")
        self.start_timeout_s = 1.0
        self.current = Incarnation(FIRST_PID)
        self.spawns = 0
        self.refuse_spawn = False

    def _prepare(self) -> None:
        """Nothing to write."""

    def _argv(self) -> list[str]:
        return []

    def is_ready(self) -> bool:
        return True

    def spawn(self) -> Incarnation:  # type: ignore[override]
        if self.refuse_spawn:
            raise ProcessStartError("port 4222 is taken")
        self.spawns += 1
        self.current = Incarnation(FIRST_PID + self.spawns)
        return self.current

    @property
    def process(self) -> Incarnation:  # type: ignore[override]
        return self.current

    def is_running(self) -> bool:
        return self.current.returncode is None

    def crash(self, code: int = -9) -> None:
        self.current.returncode = code


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def watched() -> tuple[StandIn, ComponentRestarter, Clock, list[str]]:
    component, clock, said = StandIn("nats-server liftlog-2 :4223"), Clock(), []
    return component, ComponentRestarter(component, said.append, clock), clock, said


def test_an_exit_is_reported_and_restarted_after_the_backoff(watched):
    component, restarter, clock, said = watched
    restarter.check()
    assert said == [] and component.spawns == 0

    component.crash()
    restarter.check()
    assert said == [
        "nats-server liftlog-2 :4223 exited with code -9; restarting in 1.0 s (restart 1); "
        "log: /logs/nats-server liftlog-2 :4223.log"
    ]
    assert restarter.pending
    clock.now += RESTART_INITIAL_BACKOFF_S / 2
    restarter.check()
    assert component.spawns == 0  # still waiting out the backoff

    clock.now += RESTART_INITIAL_BACKOFF_S / 2
    restarter.check()
    assert component.spawns == 1 and not restarter.pending
    assert said[-1] == f"nats-server liftlog-2 :4223 restarted (pid {FIRST_PID + 1})"


def test_repeated_crashes_wait_longer_until_the_component_stays_up(watched):
    component, restarter, clock, said = watched
    for expected in (1.0, 2.0, 4.0):
        component.crash()
        restarter.check()
        assert f"restarting in {expected:.1f} s" in said[-1]
        clock.now += expected
        restarter.check()
    clock.now += RESTART_RESET_AFTER_S
    restarter.check()  # up long enough: healthy again
    component.crash()
    restarter.check()
    assert "restarting in 1.0 s (restart 1)" in said[-1]


def test_a_failed_start_is_reported_and_tried_again_later(watched):
    component, restarter, clock, said = watched
    component.crash()
    restarter.check()
    component.refuse_spawn = True
    clock.now += RESTART_INITIAL_BACKOFF_S
    restarter.check()
    assert said[-1].startswith(
        "nats-server liftlog-2 :4223 could not be started (port 4222 is taken); "
        "restarting in 2.0 s (restart 2)"
    )
    component.refuse_spawn = False
    clock.now += 2 * RESTART_INITIAL_BACKOFF_S
    restarter.check()
    assert component.spawns == 1 and said[-1].endswith("restarted (pid 4243)")


def test_with_ha_every_server_is_restarted_and_none_stops_the_stack(tmp_path):
    stack = Standalone(nodes=3, data_dir=tmp_path, ha=True)
    assert stack.ha is not None and stack.seaweedfs is not None
    restarted = stack.restarted_components()
    assert restarted == [
        *stack.ha.nats.servers, *stack.ha.zookeeper.servers, stack.seaweedfs, *stack.nodes,
    ]  # fmt: skip
    assert stack._fatal_exit() is None  # nothing runs, yet nothing is fatal: all come back
    assert [c.label for c in stack.nodes] == ["node 1", "node 2", "node 3"]


@pytest.mark.parametrize("lake", ["local", "s3"])
def test_without_ha_only_nodes_are_restarted_and_a_core_exit_stops_the_stack(tmp_path, lake):
    stack = Standalone(nodes=2, data_dir=tmp_path, lake=lake)
    assert stack.restarted_components() == stack.nodes
    assert stack._fatal_exit() is stack.nats  # the first core component that is not running
