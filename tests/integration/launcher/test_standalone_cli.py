"""`liftlog standalone` and the CLI as a user runs them: start, use, Ctrl-C, restart; a
crashed node restarted; ports checked before anything starts; settings from a config file."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from liftlog.embedded.ports import free_port, free_port_block
from liftlog.embedded.probes import http_ok
from spark_log.client import Ack
from tests.support.paths import REPO
from tests.support.stacks import plain_stack_only
from tests.support.waiting import wait_for

pytestmark = plain_stack_only("runs its own plain `liftlog standalone` stack, not the session's")

STARTUP_TIMEOUT_S = 90
CLI_TIMEOUT_S = 60
RESTART_TIMEOUT_S = 90
LIFTLOG = str(Path(sys.executable).parent / "liftlog")
STANDALONE_EXAMPLE = REPO / "docs" / "examples" / "standalone.toml"


def _cli(*args: str, server: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The real ``liftlog`` command (``--server`` last: options may stand anywhere)."""
    return subprocess.run(
        [LIFTLOG, *args, "--server", server],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
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
    """``liftlog standalone`` as a child process; a thread collects its output lines."""

    def __init__(
        self,
        data_dir: Path | str,
        *extra: str,
        nodes: int = 1,
        cwd: Path | None = None,
        nats_port: int | None = None,
        zk_port: int | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.api_port = free_port_block(nodes)
        self.liftbridge_port = free_port_block(nodes)
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            [
                LIFTLOG,
                "standalone",
                "--data-dir",
                str(data_dir),
                "--nodes",
                str(nodes),
                "--nats-port",
                str(nats_port or free_port()),
                "--zk-port",
                str(zk_port or free_port()),
                "--api-port",
                str(self.api_port),
                "--liftbridge-port",
                str(self.liftbridge_port),
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=cwd,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip())

    def server(self, node: int = 1) -> str:
        return f"http://127.0.0.1:{self.api_port + node - 1}"

    def wait_line(self, pattern: str, timeout_s: float = STARTUP_TIMEOUT_S) -> re.Match[str]:
        """The first output line matching ``pattern``; fails early if the launcher exits."""

        def found() -> re.Match[str] | None:
            for line in list(self.lines):
                if match := re.search(pattern, line):
                    return match
            if self.proc.poll() is not None and not self._reader.is_alive():
                pytest.fail(f"standalone exited before {pattern!r}:\n" + "\n".join(self.lines))
            return None

        return wait_for(found, timeout_s, message=f"a line matching {pattern!r}")

    def wait_ready(self) -> None:
        self.wait_line(r"^ready")

    def stop(self, sig: signal.Signals = signal.SIGINT) -> int:
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout=60)
        self._reader.join(timeout=10)
        return code


@pytest.fixture
def data_dir(tmp_path: Path):
    yield tmp_path / "standalone-data"
    for pid in _processes_mentioning(str(tmp_path)):
        os.kill(pid, signal.SIGKILL)


def _values(output: str) -> list[str]:
    return [line.split("\t")[-1] for line in output.splitlines()]


def test_standalone_cli_end_to_end_and_restart(data_dir: Path):
    stack = Standalone(data_dir)
    try:
        stack.wait_ready()
        text = "\n".join(stack.lines)
        for endpoint in ("nats", "zookeeper", "node-1"):
            assert endpoint in text
        server = stack.server()
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
        assert _values(tail.stdout) == ["one", "two", "three"]
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
        listed = _cli("stream", "list", server=stack.server())
        assert "clicks" in listed.stdout
        tail = _cli("tail", "clicks", "--partition", "1", "--from", "1", server=stack.server())
        assert _values(tail.stdout) == ["two", "three"]
    finally:
        if stack.proc.poll() is None:
            stack.stop()


def test_publish_tail_describe_and_refusals_as_a_user_types_them(data_dir: Path):
    stack = Standalone(data_dir)
    try:
        stack.wait_ready()
        server = stack.server()
        created = _cli(
            "stream", "create", "--partitions", "2", "orders", "--subject", "orders.in",
            server=server,
        )  # fmt: skip
        assert created.returncode == 0, created.stderr

        # options before, between and after the positionals
        for argv in (
            ["publish", "--key", "customer-7", "orders", '{"id": 1}'],
            ["publish", "orders", "--key", "customer-7", '{"id": 2}'],
            ["publish", "orders", '{"id": 3}', "--key", "customer-7"],
        ):
            published = _cli(*argv, server=server)
            assert published.returncode == 0, published.stderr
            assert re.fullmatch(r"orders/\d offset=\d\n", published.stdout)
        into_one = _cli("publish", "orders", "a", "--partition", "1", "b", server=server)
        assert into_one.stdout.splitlines()[-1].startswith("orders/1 offset=")

        # a plain NATS message, as any NATS client sends it: no key, no Liftlog headers
        plain = _cli("publish", "--plain", "orders", "plain-one", server=server)
        assert plain.returncode == 0, plain.stderr
        assert re.fullmatch(r"orders/0 offset=\d\n", plain.stdout)

        # tail: every partition, merged by time, the partition on each line
        tail = _cli("tail", "orders", server=server)
        lines = tail.stdout.splitlines()
        assert sorted(_values(tail.stdout)) == sorted(
            ['{"id": 1}', '{"id": 2}', '{"id": 3}', "a", "b", "plain-one"]
        )
        assert {line.split()[0] for line in lines} == {"partition=0", "partition=1"}
        as_json = [
            json.loads(line)
            for line in _cli("tail", "orders", "--json", server=server).stdout.splitlines()
        ]
        stamps = [(r["timestamp"], r["partition"], r["offset"]) for r in as_json]
        assert stamps == sorted(stamps)
        plain_record = next(r for r in as_json if r["value"] == "plain-one")
        assert plain_record["key"] is None and plain_record["headers"] == {}
        assert len(_cli("tail", "orders", "-n", "4", server=server).stdout.splitlines()) == 4
        only_one = _cli("tail", "orders", "--partition", "1", "--json", server=server)
        assert {json.loads(line)["partition"] for line in only_one.stdout.splitlines()} == {1}

        # -f follows every partition: the six records so far, then two new ones
        follow = subprocess.Popen(
            [LIFTLOG, "tail", "orders", "-f", "--max", "8", "--json", "--server", server],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            for partition in ("0", "1"):
                late = _cli("publish", "orders", f"late-{partition}", "--partition", partition,
                            server=server)  # fmt: skip
                assert late.returncode == 0, late.stderr
            followed, _ = follow.communicate(timeout=CLI_TIMEOUT_S)
        finally:
            follow.kill()
            follow.wait()
        followed_records = [json.loads(line) for line in followed.splitlines()]
        assert len(followed_records) == 8
        assert {(r["partition"], r["value"]) for r in followed_records[6:]} == {
            (0, "late-0"),
            (1, "late-1"),
        }

        # a deduplicated publish acks the original offset
        first = _cli("publish", "orders", "x", "--partition", "1", "--msg-id", "m1", server=server)
        again = _cli("publish", "orders", "x", "--partition", "1", "--msg-id", "m1", server=server)
        assert again.stdout.split()[:2] == first.stdout.split()[:2]
        assert "duplicate" not in first.stdout
        if "duplicate" in Ack.__dataclass_fields__:  # Ack.duplicate is being added to the client
            assert again.stdout.split()[2:] == ["duplicate"]

        described = _cli("stream", "describe", "orders", server=server).stdout
        header = next(line for line in described.splitlines() if line.startswith("PARTITION"))
        assert header.index("LOG START") < header.index("LAKE")
        lake_line = next(line for line in described.splitlines() if line.startswith("lake table"))
        assert str(data_dir / "lake") in lake_line

        # hints in the CLI's words
        bad = _cli(
            "stream", "create", "bad", "--subject", "x.>", "--partitions", "2", server=server
        )
        assert bad.returncode == 1
        assert "use --load-balance or" in bad.stderr and "load_balance" not in bad.stderr

        # compact refuses a stream without compaction before Spark is even imported
        refused = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from liftlog.cli import main; code = main(sys.argv[1:]); "
                "print('spark imported:', 'pyspark' in sys.modules); sys.exit(code)",
                "compact",
                "orders",
                "--server",
                server,
            ],
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT_S,
            check=False,
        )
        assert refused.returncode == 1
        assert refused.stderr.startswith("liftlog: compaction_disabled: stream orders")
        assert "--force" in refused.stderr
        assert "spark imported: False" in refused.stdout

        # a paused stream refuses publishes with a typed error ack
        assert _cli("stream", "pause", "orders", server=server).returncode == 0
        paused = _cli("publish", "orders", "--partition", "0", "late", server=server)
        assert paused.returncode == 1
        assert paused.stderr.startswith("liftlog: stream_paused: ")
        plain_paused = _cli("publish", "orders", "--plain", "late", server=server)
        assert plain_paused.returncode == 1
        assert plain_paused.stderr.startswith("liftlog: stream_paused: ")
    finally:
        if stack.proc.poll() is None:
            stack.stop()


def test_standalone_with_the_example_config_restarts_a_killed_node(tmp_path: Path):
    """Settings from docs/examples/standalone.toml on every node; a relative --data-dir is
    resolved; a SIGKILLed node comes back and serves; shutdown names what it stopped."""
    stack = Standalone("relative-data", "--config", str(STANDALONE_EXAMPLE), nodes=2, cwd=tmp_path)
    data_dir = tmp_path / "relative-data"
    try:
        stack.wait_ready()
        config = (data_dir / "config" / "node-2.toml").read_text()
        assert f'data_dir = "{data_dir / "node-2"}"' in config
        assert 'fsync = "interval"' in config and "export_interval_s = 2.0" in config
        assert f'uri = "{data_dir / "lake"}"' in config

        node_2 = _processes_mentioning(str(data_dir / "config" / "node-2.toml"))
        assert len(node_2) == 1
        os.kill(node_2[0], signal.SIGKILL)
        stack.wait_line(
            r"^node 2 exited with code -9; restarting in 1\.0 s \(restart 1\)", RESTART_TIMEOUT_S
        )
        new_pid = int(stack.wait_line(r"^node 2 restarted \(pid (\d+)\)", RESTART_TIMEOUT_S)[1])
        wait_for(lambda: http_ok(f"{stack.server(2)}/readyz"), RESTART_TIMEOUT_S, message="node 2")
        created = _cli("stream", "create", "after", "--subject", "after.in", server=stack.server(2))
        assert created.returncode == 0, created.stderr
        published = _cli("publish", "after", "back", server=stack.server(2))
        assert published.returncode == 0, published.stderr

        assert stack.stop(signal.SIGTERM) == 0
        stopped = [line for line in stack.lines if line.startswith("stopped ")]
        assert f"stopped node-2 (pid {new_pid})" in stopped
        assert [line.split(" (pid")[0] for line in stopped] == [
            "stopped node-1",
            "stopped node-2",
            f"stopped zookeeper :{stack.proc.args[stack.proc.args.index('--zk-port') + 1]}",
            f"stopped nats-server :{stack.proc.args[stack.proc.args.index('--nats-port') + 1]}",
        ]
        wait_for(lambda: not _processes_mentioning(str(data_dir)), 30, message="nothing left")
    finally:
        if stack.proc.poll() is None:
            stack.stop()
        for pid in _processes_mentioning(str(tmp_path)):
            os.kill(pid, signal.SIGKILL)


def test_a_taken_port_is_named_with_its_flag_before_anything_starts(tmp_path: Path):
    data_dir = tmp_path / "never-created"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        result = subprocess.run(
            [
                LIFTLOG, "standalone", "--data-dir", str(data_dir), "--nats-port", str(busy),
                "--zk-port", str(free_port()), "--api-port", str(free_port_block(1)),
                "--liftbridge-port", str(free_port_block(1)),
            ],
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT_S,
            check=False,
        )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"liftlog: port_in_use: port {busy} (NATS) is in use; choose another with --nats-port"
    )
    assert not data_dir.exists()


def test_node_command_rejects_unknown_config_keys(tmp_path: Path):
    config = tmp_path / "node.toml"
    config.write_text('broker_id = 1\ndata_dir = "/tmp/x"\nzk_conect = "127.0.0.1:2181"\n')
    result = subprocess.run(
        [LIFTLOG, "node", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 2
    assert "zk_conect" in result.stderr


def test_standalone_refuses_identity_keys_in_its_config(tmp_path: Path):
    config = tmp_path / "standalone.toml"
    config.write_text('broker_id = 3\n[log]\nfsync = "never"\n')
    result = subprocess.run(
        [LIFTLOG, "standalone", "--config", str(config), "--data-dir", str(tmp_path / "d")],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 1
    assert "broker_id cannot be set in a standalone config" in result.stderr
    assert not (tmp_path / "d").exists()
