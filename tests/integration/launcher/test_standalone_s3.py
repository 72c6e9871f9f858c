"""``liftlog standalone --lake s3`` as a user runs it: an embedded SeaweedFS started before the
nodes and stopped after them, a bucket, and every node exporting to ``s3://liftlog/lake`` with
the endpoint and generated credentials in its config file (owner-only)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from deltalake import DeltaTable

from spark_log.config import load_node_config
from spark_log.lake.storage import lake_storage
from tests.integration.launcher.test_standalone_cli import (  # noqa: F401  (data_dir is a fixture)
    Standalone,
    _cli,
    _processes_mentioning,
    data_dir,
)
from tests.support.stacks import plain_stack_only
from tests.support.waiting import wait_for

pytestmark = plain_stack_only("runs its own plain `liftlog standalone` stack, not the session's")


def test_standalone_with_an_s3_lake_exports_to_its_embedded_seaweedfs(data_dir: Path):  # noqa: F811
    stack = Standalone(data_dir, "--lake", "s3", nodes=2)
    try:
        stack.wait_ready()
        s3_line = stack.wait_line(r"^s3\s+(http://\S+)")
        stack.wait_line(r"^lake\s+s3://liftlog/lake$")
        config_path = data_dir / "config" / "node-2.toml"
        assert stat.S_IMODE(config_path.stat().st_mode) == 0o600
        config = load_node_config(config_path)
        assert config.lake.uri == "s3://liftlog/lake"
        assert config.lake.storage_options["aws_endpoint_url"] == s3_line.group(1)
        assert (data_dir / "seaweedfs").is_dir()
        server = stack.server()
        created = _cli(
            "stream", "create", "clicks", "--subject", "clicks.in", "--partitions", "2",
            server=server,
        )  # fmt: skip
        assert created.returncode == 0, created.stderr
        for p in (0, 1):
            published = _cli(
                "publish", "clicks", "--partition", str(p), server=server, stdin="a\nb\n"
            )
            assert published.returncode == 0, published.stderr
        flushed = _cli("stream", "flush", "clicks", "--json", server=server)
        assert flushed.returncode == 0, flushed.stderr
        body = json.loads(flushed.stdout)
        assert [p["lake_offset"] for p in body["partitions"]] == [2, 2]
        uri = body["lake"]["uri"]
        assert uri.startswith("s3://liftlog/lake/clicks@")
        options = lake_storage(config.lake).delta_options()
        assert DeltaTable(uri, storage_options=options).to_pyarrow_table().num_rows == 4
        assert stack.stop() == 0
        assert any("stopped seaweedfs" in line for line in stack.lines)
        wait_for(
            lambda: not _processes_mentioning(str(data_dir)),
            30,
            message="no process of the stack left, weed included",
        )
    finally:
        if stack.proc.poll() is None:
            stack.stop()
