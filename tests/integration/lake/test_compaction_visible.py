"""Key compaction seen from outside the lake: describe and tail name the compacted offsets, and
a ``liftlog compact`` with nothing to compute never starts a JVM.

The JVM check runs the real CLI in a child process whose ``JAVA_HOME`` points at a fake
``java`` that leaves a mark and fails: a run that needs Spark fails there, a no-op never
reaches it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from datasource.compaction import compact_stream
from liftlog import cli
from spark_log.api_models import StreamDescription
from tests.integration.conftest import create_stream
from tests.integration.lake.test_compaction import flush, publish, target_of

CLI_TIMEOUT_S = 120
FAKE_JAVA = """#!/bin/sh
touch "{mark}"
exit 1
"""


def _create_compacted_stream(api: httpx.Client, stream: str) -> None:
    create_stream(api, stream, partitions=2, compaction=True)


@pytest.fixture
def fake_java(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose JVM start fails and leaves ``mark`` behind."""
    mark = tmp_path / "java-started"
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(FAKE_JAVA.format(mark=mark))
    java.chmod(0o755)
    env = {**os.environ, "JAVA_HOME": str(java.parent.parent)}
    env["PATH"] = f"{java.parent}{os.pathsep}{env.get('PATH', '')}"
    return env, mark


def _compact_in_child(env: dict[str, str], server: str, stream: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "liftlog.cli", "compact", stream, "--server", server],
        env=env,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )


def test_describe_and_tail_name_the_compacted_offsets(node, api, stream_name, spark, capsys):
    _create_compacted_stream(api, stream_name)
    rows = [("k1", "a"), ("k2", "b"), (None, "x"), ("k1", "c"), ("k2", "")]
    publish(api, stream_name, 0, rows)
    flush(api, stream_name)
    server = str(api.base_url)

    assert cli.main(["stream", "describe", stream_name, "--server", server]) == 0
    assert "compacted by key" not in capsys.readouterr().out  # nothing compacted yet

    report = compact_stream(spark, target_of(api, stream_name))
    assert report.committed

    described = StreamDescription.from_json(api.get(f"/v1/streams/{stream_name}").json())
    assert described.partition(0).lake_compacted_offset == 5
    assert described.partition(1).lake_compacted_offset is None  # nothing exported there
    assert described.lake is not None and described.lake.compacted_at_ms == report.run_id

    assert cli.main(["stream", "describe", stream_name, "--server", server]) == 0
    out = capsys.readouterr().out
    assert "lake: partition 0 compacted by key below offset 5 (last run " in out
    assert "the log keeps every record until its retention" in out

    assert cli.main(["tail", stream_name, "--until", "latest", "--server", server]) == 0
    tailed = capsys.readouterr()
    assert len(tailed.out.splitlines()) == 5  # the log still holds every record
    assert "note: lake: partition 0 compacted by key below offset 5" in tailed.err

    assert cli.main(["tail", stream_name, "--partition", "1", "--server", server]) == 0
    assert "compacted" not in capsys.readouterr().err  # only the partitions tail reads


def test_compact_with_nothing_to_do_starts_no_jvm(node, api, stream_name, spark, fake_java):
    env, mark = fake_java
    _create_compacted_stream(api, stream_name)
    publish(api, stream_name, 0, [("k1", "a"), ("k1", "b")])
    flush(api, stream_name)
    compact_stream(spark, target_of(api, stream_name))
    server = str(api.base_url)

    done = _compact_in_child(env, server, stream_name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "nothing to compact: Spark not started" in done.stdout
    assert "partition 0: skipped (compacted up to offset 2; nothing new below 2)" in done.stdout
    assert not mark.exists()

    publish(api, stream_name, 0, [("k1", "c")])  # new records below the lake offset: work
    flush(api, stream_name)
    needs_spark = _compact_in_child(env, server, stream_name)
    assert needs_spark.returncode != 0
    assert mark.exists()  # the same environment does start Java when there is work
