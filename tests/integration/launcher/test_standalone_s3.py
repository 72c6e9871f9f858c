"""``liftlog standalone --lake s3`` as a user runs it: an embedded SeaweedFS started before the
nodes and stopped after them, a bucket, and every node exporting to ``s3://liftlog/lake`` with
the endpoint and generated credentials in its config file (owner-only)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

from deltalake import DeltaTable

from spark_log.client.credentials_file import read_credentials_file
from spark_log.config import load_node_config
from spark_log.lake.storage import lake_storage
from tests.integration.launcher.test_standalone_cli import (  # noqa: F401  (data_dir is a fixture)
    CLI_TIMEOUT_S,
    LIFTLOG,
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

        # the store's keys are printed and written where the tools read them
        key = stack.wait_line(r"^s3 access key\s+(\S+)$").group(1)
        secret = stack.wait_line(r"^s3 secret key\s+(\S+)$").group(1)
        written = read_credentials_file(stack.wait_line(r"^credentials\s+(\S+)$").group(1))
        assert written.server == f"{server},{stack.server(2)}"
        assert written.lake == {k: config.lake.storage_options[k] for k in written.lake}
        assert (written.lake["aws_access_key_id"], written.lake["aws_secret_access_key"]) == (
            key,
            secret,
        )
        lake_env = Path(stack.wait_line(r"^lake env\s+(\S+)$").group(1)).read_text()
        assert f"export AWS_SECRET_ACCESS_KEY={secret}\n" in lake_env
        assert f"export AWS_ENDPOINT_URL={s3_line.group(1)}\n" in lake_env
        # without them a compaction is refused in one line, before Spark or delta-rs start
        bare = {k: v for k, v in os.environ.items() if not k.startswith(("LIFTLOG_", "AWS_"))}
        refused = subprocess.run(
            [LIFTLOG, "compact", "clicks", "--force", "--server", server],
            capture_output=True, text=True, timeout=CLI_TIMEOUT_S, check=False, env=bare,
        )  # fmt: skip
        assert refused.returncode == 1, refused
        [line] = refused.stderr.splitlines()
        assert line.startswith("liftlog: lake_credentials_missing: no credentials for the lake")
        assert "--lake-option" in line and "credentials.toml" in line
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
