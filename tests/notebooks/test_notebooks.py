"""Every notebook in ``notebooks/`` runs top to bottom on a fresh kernel, as a user would run it.

The kernel gets the environment a user's Jupyter would give it: none of what the tests set for
themselves (Spark's worker interpreter, JVM flags, Liftlog's test settings) and no virtualenv
on ``PATH``, so each notebook must make Spark find Liftlog on its own. Each starts its own
local cluster, which covers the "start" path of the first cell; another runs the quickstart
twice on one running cluster (``LIFTLOG_SERVERS``), as a user reruns a notebook. The
notebooks' own ``assert`` lines check what they show (counts, compaction results).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from liftlog.embedded import Standalone
from liftlog.embedded.ports import PORT_RANGE_ENV
from spark_log.api_models import StreamList
from spark_log.client.rest import RestClient
from tests.support.paths import REPO

NOTEBOOKS = REPO / "notebooks"
NAMES = sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))
CELL_TIMEOUT_S = 300
TEST_ONLY_VARIABLES = frozenset(
    {"PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_SUBMIT_OPTS", "VIRTUAL_ENV", "MPLBACKEND"}
)
"""What tests/conftest.py, tests/support and a shell's ``activate`` set, and a kernel lacks."""
TEST_ONLY_PREFIXES = ("LIFTLOG_", "PYTEST_")
KEPT = frozenset({PORT_RANGE_ENV})
"""Kept: it only keeps the ports of parallel test workers apart."""


def kernel_environment(base: Mapping[str, str], servers: str | None = None) -> dict[str, str]:
    """``base`` as a user's kernel would see it: without the test-only variables, without the
    virtualenv's ``bin`` on ``PATH`` (there ``python3`` would be the venv's, hiding a notebook
    that leaves Spark's workers to whatever ``python3`` is), with ``LIFTLOG_SERVERS`` when
    the notebook should use a running cluster."""
    venv_bin = str(Path(sys.executable).parent)
    env = {
        name: value
        for name, value in base.items()
        if name in KEPT
        or (name not in TEST_ONLY_VARIABLES and not name.startswith(TEST_ONLY_PREFIXES))
    }
    path = [entry for entry in env.get("PATH", "").split(os.pathsep) if entry != venv_bin]
    env["PATH"] = os.pathsep.join(path)
    if servers is not None:
        env["LIFTLOG_SERVERS"] = servers
    return env


def run_notebook(name: str, directory: Path, env: dict[str, str]) -> None:
    """Execute every cell on a new kernel; a failing cell raises with its traceback."""
    notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(directory)}},
    )
    client.execute(env=env)
    errors = [
        output
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    assert errors == []


@pytest.fixture
def cluster() -> Iterator[str]:
    """A running one-node cluster, as a user's would be; its REST URLs."""
    stack = Standalone.local(nodes=1).start()
    try:
        yield stack.servers
    finally:
        stack.stop()


def test_kernel_environment_drops_what_the_tests_set() -> None:
    venv_bin = str(Path(sys.executable).parent)
    base = {
        "PATH": os.pathsep.join([venv_bin, "/usr/bin"]),
        "HOME": "/home/ada",
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_SUBMIT_OPTS": "-XX:+UseSerialGC",
        "LIFTLOG_TEST_STACK": "secure",
        "LIFTLOG_SERVERS": "http://elsewhere:1",
        PORT_RANGE_ENV: "20000-20999",
    }
    assert kernel_environment(base, "http://127.0.0.1:9644") == {
        "PATH": "/usr/bin",
        "HOME": "/home/ada",
        PORT_RANGE_ENV: "20000-20999",
        "LIFTLOG_SERVERS": "http://127.0.0.1:9644",
    }


@pytest.mark.parametrize("name", NAMES or ["<none>"])
def test_notebook_runs(name: str, tmp_path: Path) -> None:
    assert NAMES, f"no notebooks in {NOTEBOOKS}"
    run_notebook(name, tmp_path, kernel_environment(os.environ))


@pytest.mark.slow  # about 90 s: the slow tier, which CI runs after make test
def test_quickstart_runs_twice_on_one_cluster(cluster: str, tmp_path: Path) -> None:
    """A rerun shows that run's events only (its own assertions on counts and the plot),
    and each run deletes the stream it made, leaving a user's cluster as it was. The other
    notebooks name their streams the same way."""
    env = kernel_environment(os.environ, cluster)
    for run in ("first", "second"):
        directory = tmp_path / run
        directory.mkdir()
        run_notebook("quickstart", directory, env)
    streams = StreamList.from_json(RestClient(cluster).get_json("/v1/streams")).streams
    assert [s.name for s in streams] == []
