"""Children spawned to die with their parent: argv wrapping, errors, and exit ordering."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from liftlog.embedded import parent_death
from liftlog.embedded.parent_death import dying_with_parent, popen_dying_with_parent


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
