"""`liftlog standalone` killed with SIGKILL: every process it started dies with it (a stopped
one too), its ports and its data directory are freed, and while any process of a stack lives a
second launcher on the same directory refuses to start, naming the holders."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from liftlog.embedded.data_dir_lock import LOCK_FILE_NAME, DataDirLock
from liftlog.embedded.port_check import port_is_free
from liftlog.embedded.ports import free_port, free_port_block
from tests.integration.launcher.test_standalone_cli import CLI_TIMEOUT_S, LIFTLOG, Standalone
from tests.integration.launcher.test_standalone_ha_cli import HaStandalone
from tests.support.stacks import plain_stack_only
from tests.support.waiting import wait_for

pytestmark = plain_stack_only("runs its own plain `liftlog standalone` stacks, not the session's")

GONE_TIMEOUT_S = 30
HOST = "127.0.0.1"
_PORT = re.compile(r":(\d+)")


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children, ...), read from /proc."""
    found: list[int] = []
    pending = [pid]
    while pending:
        parent = pending.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except OSError:  # the task or the process ended meanwhile
                continue
            found += children
            pending += children
    return found


def _alive(pid: int) -> bool:
    """True unless the process is gone or a zombie (dead, only waiting to be reaped)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    state = next(line for line in status.splitlines() if line.startswith("State:"))
    return state.split()[1] not in ("Z", "X")


def _ports(lines: list[str]) -> list[int]:
    """Every port in the endpoint lines the launcher printed before "ready"."""
    ready = next(i for i, line in enumerate(lines) if line.startswith("ready"))
    return [int(port) for line in lines[1:ready] for port in _PORT.findall(line)]


def _second_launcher(data_dir: Path) -> subprocess.CompletedProcess[str]:
    """``liftlog standalone`` on ``data_dir`` and free ports (only the directory is shared)."""
    return subprocess.run(
        [
            LIFTLOG, "standalone", "--data-dir", str(data_dir), "--nats-port", str(free_port()),
            "--zk-port", str(free_port()), "--api-port", str(free_port_block(1)),
            "--liftbridge-port", str(free_port_block(1)),
        ],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )  # fmt: skip


def _assert_refused(
    result: subprocess.CompletedProcess[str], data_dir: Path, pids: list[int]
) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.startswith(
        f"liftlog: data_dir_in_use: data directory {data_dir} is in use: "
        f"{data_dir / LOCK_FILE_NAME} is locked by process(es) "
    ), result.stderr
    named = {int(pid) for pid in re.findall(r"\d+", result.stderr.split("process(es)")[1])}
    assert set(pids) <= named, (pids, result.stderr)
    assert "starting" not in result.stdout


def _kill_and_wait_all_gone(stack: Standalone, children: list[int], ports: list[int]) -> None:
    stack.proc.kill()
    stack.proc.wait(timeout=10)
    wait_for(
        lambda: not [pid for pid in children if _alive(pid)],
        GONE_TIMEOUT_S,
        message="every process of the killed launcher to be gone",
    )
    wait_for(
        lambda: all(port_is_free(HOST, port) for port in ports),
        GONE_TIMEOUT_S,
        message=f"ports {ports} to be free",
    )
    DataDirLock(Path(stack.data_dir)).check_free()


@pytest.fixture
def pids_to_kill() -> Iterator[list[int]]:
    """PIDs the test started or saw started; whatever still runs at the end is SIGKILLed."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_killed_launcher_takes_its_children_and_frees_the_data_dir(
    temp_dir: Path, pids_to_kill: list[int]
) -> None:
    data_dir = temp_dir / "data"
    stack = Standalone(data_dir, nodes=2)
    pids_to_kill.append(stack.proc.pid)
    stack.wait_ready()
    children = _descendants(stack.proc.pid)
    pids_to_kill.extend(children)
    assert len(children) >= 4, children  # nats-server, ZooKeeper, two nodes
    ports = _ports(stack.lines)

    _assert_refused(_second_launcher(data_dir), data_dir, [stack.proc.pid, *children])
    assert (data_dir / LOCK_FILE_NAME).read_text().strip() == str(stack.proc.pid)

    _kill_and_wait_all_gone(stack, children, ports)

    again = Standalone(data_dir)
    pids_to_kill.append(again.proc.pid)
    again.wait_ready()
    pids_to_kill.extend(_descendants(again.proc.pid))
    assert again.stop() == 0


def test_a_killed_ha_launcher_takes_every_child_even_a_stopped_one(
    temp_dir: Path, pids_to_kill: list[int]
) -> None:
    stack = HaStandalone(temp_dir / "data")
    pids_to_kill.append(stack.proc.pid)
    stack.wait_ready()
    children = _descendants(stack.proc.pid)
    pids_to_kill.extend(children)
    assert len(children) >= 10, children  # 3 nats-servers, 3 ZooKeepers, SeaweedFS, 3 nodes
    os.kill(children[-1], signal.SIGSTOP)  # a paused child must die all the same

    _kill_and_wait_all_gone(stack, children, _ports(stack.lines))


def test_a_process_left_holding_the_lock_keeps_a_launcher_out(
    temp_dir: Path, pids_to_kill: list[int]
) -> None:
    """The lock is inherited: a process that outlived its launcher holds it by itself."""
    data_dir = temp_dir / "data"
    script = (
        "import subprocess, sys\n"
        "from pathlib import Path\n"
        "from liftlog.embedded.data_dir_lock import DataDirLock\n"
        "lock = DataDirLock(Path(sys.argv[1]))\n"
        "lock.acquire()\n"
        "left = subprocess.Popen(\n"
        "    ['sleep', '600'], pass_fds=[lock.fd], start_new_session=True,\n"
        "    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,\n"
        ")\n"
        "print(left.pid)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(data_dir)],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=True,
    )
    left = int(out.stdout)
    pids_to_kill.append(left)

    _assert_refused(_second_launcher(data_dir), data_dir, [left])
    assert sorted(p.name for p in data_dir.iterdir()) == [LOCK_FILE_NAME]  # nothing touched

    os.kill(left, signal.SIGKILL)
    wait_for(lambda: not _alive(left), GONE_TIMEOUT_S, message="the leftover to die")
    DataDirLock(data_dir).check_free()
