"""Every notebook in ``notebooks/`` runs top to bottom on a fresh kernel, as a user would run it.

Each starts its own local cluster (``Standalone.local``) and Spark session, so the test covers
the "start" path of the first cell too; a failing cell fails the test with its traceback. The
notebooks' own ``assert`` lines check what they show (counts, compaction results).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.support.paths import REPO

NOTEBOOKS = REPO / "notebooks"
CELL_TIMEOUT_S = 300


@pytest.mark.parametrize("name", sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) or ["<none>"])
def test_notebook_runs(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = NOTEBOOKS / f"{name}.ipynb"
    assert path.is_file(), f"no notebooks in {NOTEBOOKS}"
    monkeypatch.delenv("LIFTLOG_SERVERS", raising=False)  # each notebook starts its own stack
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute(env=dict(os.environ))
    errors = [
        output
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    assert errors == []
