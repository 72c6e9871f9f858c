"""Shell completion answers through argcomplete's protocol, from the real ``liftlog``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

LIFTLOG = Path(sys.executable).parent / "liftlog"
ARGCOMPLETE_IFS = "\013"


def complete(line: str, tmp_path: Path) -> list[str]:
    """Run ``liftlog`` as bash's completion function does: the words in COMP_LINE, the
    answers written to file descriptor 8."""
    out = tmp_path / "completions"
    env = {
        **os.environ,
        "_ARGCOMPLETE": "1",
        "_ARGCOMPLETE_SHELL": "bash",
        "COMP_LINE": line,
        "COMP_POINT": str(len(line)),
        "_ARGCOMPLETE_IFS": ARGCOMPLETE_IFS,
    }
    result = subprocess.run(
        ["bash", "-c", f'"{LIFTLOG}" 8>"{out}" 9>/dev/null'],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return [word.strip() for word in out.read_text().split(ARGCOMPLETE_IFS) if word]


def test_commands_complete(tmp_path: Path):
    assert complete("liftlog str", tmp_path) == ["stream"]


def test_subcommands_and_flags_complete(tmp_path: Path):
    assert "describe" in complete("liftlog stream d", tmp_path)
    assert complete("liftlog stream create --rep", tmp_path) == ["--replication-factor"]


def test_completion_command_prints_the_activation_script():
    for shell, marker in (("bash", "complete "), ("zsh", "#compdef liftlog")):
        result = subprocess.run(
            [str(LIFTLOG), "completion", shell],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 0
        assert marker in result.stdout and "liftlog" in result.stdout
