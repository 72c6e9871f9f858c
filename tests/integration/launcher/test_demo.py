"""`liftlog demo` (what `make demo` runs) end to end: stack, stream, events, Spark query, stop."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.stacks import plain_stack_only

pytestmark = plain_stack_only("`liftlog demo` runs its own plain stack, not the session's")


def test_demo_runs_end_to_end(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "liftlog.cli",
            "demo",
            "--events",
            "600",
            "--data-dir",
            str(tmp_path / "demo"),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    assert "replication factor 3" in out
    assert "revenue by city (Spark):" in out
    summary = json.loads(out[out.index("{\n") : out.rindex("}") + 1])
    assert summary["events_published"] == summary["events_read_back"] == 600
    assert sum(summary["lake_offsets"].values()) == 600  # flushed to the lake, then a live tail
    expected = 600 + summary["tail_events"]
    assert f'spark.read.format("liftlog"): {expected} records (expected {expected})' in out
    assert out.rstrip().endswith("liftlog demo: everything stopped")
