"""Children spawned to die with their parent: argv wrapping, errors, and exit ordering."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from liftlog.embedded import parent_death
from liftlog.embedded.parent_death import dying_with_parent, popen_dying_with_parent
from tests.support.waiting import wait_for


def test_argv_is_wrapped_by_setpriv_with_the_resolved_program():
    if parent_death.SETPRIV is None:
        pytest.skip("setpriv (util-linux) is not installed")
    wrapped = dying_with_parent(["true", "x"])
    assert wrapped[0] == parent_death.SETPRIV
    assert wrapped[1] == "--pdeathsig=KILL"
    assert wrapped[-2].endswith("/true") and wrapped[-1] == "x"


def test_a_missing_program_fails_at_spawn_and_the_spawner_survives():
    with pytest.raises(FileNotFoundError):
        popen_dying_with_parent(["/nonexistent/program"])
    assert popen_dying_with_parent(["true"]).wait(timeout=10) == 0


def test_children_are_alive_when_atexit_hooks_run():
    """A non-daemon spawner thread would be ended (and the children killed) at interpreter
    shutdown before atexit hooks could stop the children in order."""
    script = textwrap.dedent(
        """
        import atexit
        from liftlog.embedded.parent_death import popen_dying_with_parent
        child = popen_dying_with_parent(["sleep", "30"])
        def report():
            print("alive" if child.poll() is None else "dead", flush=True)
            child.kill()
            child.wait()
        atexit.register(report)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30, check=True
    )
    assert out.stdout.strip() == "alive"


def _running(pid: int) -> bool:
    """True unless the process is gone or a zombie (dead, only waiting to be reaped)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status and "\nState:\tX" not in status


def test_a_child_whose_parent_died_before_setpriv_never_runs_the_command(tmp_path: Path) -> None:
    """setpriv sets the signal some time after the fork: a parent killed in between must not
    leave the command running with nobody to kill it (nats-server was seen to survive so)."""
    if parent_death.SETPRIV is None:
        pytest.skip("setpriv (util-linux) is not installed")
    marker = tmp_path / "ran"
    script = textwrap.dedent(
        """
        import os, subprocess, sys
        from liftlog.embedded.parent_death import dying_with_parent
        argv = dying_with_parent(["touch", sys.argv[1]])
        # the child holds back setpriv until this process is gone: reaped, so the child
        # has been handed to a new parent (a closed stdin alone comes earlier than that)
        hold = 'read _; while [ -e "/proc/$1" ]; do :; done; shift; exec "$@"'
        child = subprocess.Popen(
            ["sh", "-c", hold, "hold", str(os.getpid()), *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        print(child.pid, flush=True)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(marker)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    orphan = int(out.stdout)
    wait_for(lambda: not _running(orphan), 10, message="the orphaned child to exit")
    assert not marker.exists()
