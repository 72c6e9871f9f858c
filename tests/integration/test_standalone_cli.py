"""`liftlog standalone` and the CLI as a user runs them: start, use, Ctrl-C, restart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from liftlog.embedded.process import free_port
from tests.waiting import wait_for

STARTUP_TIMEOUT_S = 90


def _cli(*args: str, server: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "liftlog.cli", *args, "--server", server],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _processes_mentioning(text: str) -> list[int]:
    """PIDs whose command line mentions ``text`` (our children carry the data dir)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmdline and int(entry.name) != os.getpid():
            pids.append(int(entry.name))
    return pids


class Standalone:
    """``liftlog standalone`` as a child process, read line by line."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.api_port = free_port()
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "liftlog.cli",
                "standalone",
                "--data-dir",
                str(data_dir),
                "--nats-port",
                str(free_port()),
                "--zk-port",
                str(free_port()),
                "--api-port",
                str(self.api_port),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    @property
    def server(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def wait_ready(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip())
            if line.startswith("ready"):
                return
        pytest.fail("standalone exited before ready:\n" + "\n".join(self.lines))

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout=60)


@pytest.fixture
def data_dir(tmp_path: Path):
    yield tmp_path / "standalone-data"
    for pid in _processes_mentioning(str(tmp_path)):
        os.kill(pid, signal.SIGKILL)


def test_standalone_cli_end_to_end_and_restart(data_dir: Path):
    stack = Standalone(data_dir)
    try:
        stack.wait_ready()
        text = "\n".join(stack.lines)
        for endpoint in ("nats", "zookeeper", "node-1"):
            assert endpoint in text
        server = stack.server
        created = _cli(
            "stream",
            "create",
            "clicks",
            "--subject",
            "clicks.in",
            "--partitions",
            "2",
            server=server,
        )
        assert created.returncode == 0, created.stderr
        assert "created" in created.stdout
        published = _cli(
            "publish", "clicks", "--partition", "1", server=server, stdin="one\ntwo\nthree\n"
        )
        assert published.returncode == 0, published.stderr
        assert "clicks/1 offset=2" in published.stdout
        tail = _cli("tail", "clicks", "--partition", "1", server=server)
        assert [line.split("\t")[-1] for line in tail.stdout.splitlines()] == [
            "one",
            "two",
            "three",
        ]
        described = _cli("stream", "describe", "clicks", server=server)
        assert "PARTITION" in described.stdout and "clicks.in" in described.stdout
        missing = _cli("stream", "describe", "nope", server=server)
        assert missing.returncode == 1 and "stream_not_found" in missing.stderr
        assert stack.stop() == 0
        wait_for(
            lambda: not _processes_mentioning(str(data_dir)),
            30,
            message="no process of the stack left",
        )
        stack = Standalone(data_dir)
        stack.wait_ready()
        listed = _cli("stream", "list", server=stack.server)
        assert "clicks" in listed.stdout
        tail = _cli("tail", "clicks", "--partition", "1", "--from", "1", server=stack.server)
        assert [line.split("\t")[-1] for line in tail.stdout.splitlines()] == ["two", "three"]
    finally:
        if stack.proc.poll() is None:
            stack.stop()


def test_node_command_rejects_unknown_config_keys(tmp_path: Path):
    config = tmp_path / "node.toml"
    config.write_text('broker_id = 1\ndata_dir = "/tmp/x"\nzk_conect = "127.0.0.1:2181"\n')
    result = subprocess.run(
        [sys.executable, "-m", "liftlog.cli", "node", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "zk_conect" in result.stderr
