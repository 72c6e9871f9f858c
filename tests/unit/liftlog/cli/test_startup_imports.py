"""The command line starts without its heavy libraries: building the parser and printing a
command's help must not load Arrow, NATS, the Delta lake, Spark, ZooKeeper's client or the
node's web framework; each command imports those when it runs. A fresh interpreter per case,
since this test process has imported them all already."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("pyarrow", "numpy", "nats", "deltalake", "pyspark", "kazoo", "fastapi", "cryptography")
PROBE = """
import json, sys
from liftlog.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = json.loads(HEAVY)
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules} & set(heavy))))
"""
PROBE_TIMEOUT_S = 60


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["tail", "--help"],
        ["stream", "list", "--help"],
        ["publish", "--help"],
        ["standalone", "--help"],
        ["group", "--help"],
        ["consume", "--help"],
        ["compact", "--help"],
        ["acl", "list", "--help"],
    ],
)
def test_help_loads_no_heavy_module(argv: list[str]) -> None:
    probe = PROBE.replace("HEAVY", repr(json.dumps(HEAVY)))
    done = subprocess.run(
        [sys.executable, "-c", probe, *argv],
        capture_output=True,
        text=True,
        timeout=PROBE_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "usage: liftlog" in done.stdout
    assert json.loads(done.stdout.splitlines()[-1]) == []


def test_the_probe_sees_a_heavy_import() -> None:
    """The check itself: a module that is loaded shows up."""
    probe = PROBE.replace("HEAVY", repr(json.dumps(HEAVY))).replace(
        "from liftlog.cli import main", "import nats\nfrom liftlog.cli import main"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, "--help"],
        capture_output=True,
        text=True,
        timeout=PROBE_TIMEOUT_S,
        check=False,
    )
    assert json.loads(done.stdout.splitlines()[-1]) == ["nats"]
