"""The embedded components: real nats-server, real ZooKeeper, child process handling."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import stat
import sys
from pathlib import Path

import nats
import pytest

from coordinator.zk import ZkSession
from liftlog.embedded import ChildProcess, NatsServer, Standalone, ZooKeeperServer, free_port
from liftlog.embedded.java import java_major_version
from liftlog.embedded.port_check import PORT_NODE_API, PORT_ZOOKEEPER, PortInUseError
from liftlog.embedded.probes import four_letter_word, http_ok
from liftlog.embedded.process import live_children
from spark_log.config import DEFAULT_SEGMENT_BYTES
from spark_log.errors import ConfigError, InvalidRequestError, ProcessStartError
from tests.support.paths import REPO
from tests.support.stacks import plain_stack_only
from tests.support.waiting import wait_for

pytestmark = plain_stack_only("starts its own plain servers and stacks, not the session's")

CHILD_READY_TIMEOUT_S = 30.0
STANDALONE_READY_TIMEOUT_S = 90.0

_IGNORES_SIGTERM = """
import signal, subprocess, sys, threading
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # inherited by the grandchild across exec
grandchild = subprocess.Popen([sys.executable, "-c", "import threading; threading.Event().wait()"])
print(f"ready grandchild={grandchild.pid}", flush=True)
threading.Event().wait()
"""
_STANDALONE = """
import sys
from liftlog.embedded import Standalone
standalone = Standalone(0, sys.argv[1], int(sys.argv[2]), int(sys.argv[3])).start()
ready = f"ready nats={standalone.nats.pid} zookeeper={standalone.zookeeper.pid}"
standalone.run_forever(on_ready=lambda: print(ready, flush=True))
print("stopped", flush=True)
"""
_LEAVES_A_CHILD = """
import sys
from liftlog.embedded import ChildProcess
child = ChildProcess("left behind", [sys.executable, "-c", sys.argv[1]], sys.argv[2]).start()
print(f"ready pid={child.pid}", flush=True)
"""
_BLOCKS = "import threading; print('ready', flush=True); threading.Event().wait()"


def pid_alive(pid: int) -> bool:
    """False once the process is gone (a zombie nobody reaped yet counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def assert_gone(pid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def proc_state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]


def python_child(code: str, log_path: Path, *args: str) -> ChildProcess:
    return ChildProcess(
        "test child",
        [sys.executable, "-c", code, *args],
        log_path,
        extra_env={"PYTHONPATH": str(REPO)},
    ).start()


def child_output(child: ChildProcess) -> str:
    """What the child printed (without the "=== starting" header lines)."""
    lines = child.log_path.read_text().splitlines()
    return "\n".join(line for line in lines if not line.startswith("=== "))


def said_ready(child: ChildProcess) -> bool:
    return "ready" in child_output(child)


async def nats_round_trip(url: str) -> bytes:
    client = await nats.connect(url, connect_timeout=5, max_reconnect_attempts=0)
    try:
        subscription = await client.subscribe("liftlog.test")
        await client.publish("liftlog.test", b"hello")
        message = await subscription.next_msg(timeout=5)
        await client.jetstream().account_info()  # JetStream is on
        return message.data
    finally:
        await client.close()


# -- the real servers -----------------------------------------------------------------------


def test_nats_server_starts_answers_and_stops(temp_dir):
    server = NatsServer(free_port(), temp_dir / "nats", jetstream=True)
    server.start()
    pid = server.pid
    try:
        assert http_ok(f"{server.monitor_url}/healthz")
        assert asyncio.run(nats_round_trip(server.url)) == b"hello"
    finally:
        server.stop()

    assert_gone(pid)
    assert not server.is_ready()
    assert server.process not in live_children()


def test_zookeeper_starts_answers_and_stops(temp_dir):
    server = ZooKeeperServer(free_port(), temp_dir / "zk")
    server.start()
    pid = server.pid
    try:
        assert four_letter_word(server.host, server.port, "ruok") == "imok"
        assert "Mode: standalone" in four_letter_word(server.host, server.port, "srvr")
        with ZkSession(server.connect_string, "/embedded-test", 2.0) as session:
            session.create_json("/hello", {"n": 1})
    finally:
        server.stop()

    assert_gone(pid)
    assert four_letter_word(server.host, server.port, "ruok") == ""


def test_standalone_restart_on_the_same_data_dir_keeps_zookeeper_data(temp_dir):
    ports = {"nats_port": free_port(), "zk_port": free_port(), "api_port": free_port()}
    first = Standalone(nodes=0, data_dir=temp_dir, **ports)
    with first:
        assert [name for name, _ in first.endpoints()] == ["nats", "nats monitor", "zookeeper"]
        assert dict(first.endpoints())["nats"] == f"nats://127.0.0.1:{ports['nats_port']}"
        with ZkSession(first.zookeeper.connect_string, "/kept") as session:
            session.create_json("/v1/streams/orders", {"version": 1})
        pids = [first.nats.pid, first.zookeeper.pid]
    for pid in pids:
        assert_gone(pid)

    with Standalone(nodes=0, data_dir=temp_dir, **ports) as second:
        with ZkSession(second.zookeeper.connect_string, "/kept") as session:
            assert session.get_json("/v1/streams/orders")[0] == {"version": 1}
        assert (temp_dir / "logs" / "zookeeper.log").is_file()


def test_standalone_run_forever_stops_everything_on_sigterm(temp_dir):
    ports = [str(free_port()), str(free_port())]
    runner = python_child(_STANDALONE, temp_dir / "runner.log", str(temp_dir / "data"), *ports)
    try:
        runner.wait_ready(lambda: said_ready(runner), STANDALONE_READY_TIMEOUT_S)
        output = child_output(runner)
        pids = [int(output.split(f"{name}=")[1].split()[0]) for name in ("nats", "zookeeper")]
        assert all(pid_alive(pid) for pid in pids)

        code = runner.stop()  # SIGTERM reaches the runner only: the servers have own sessions
    finally:
        runner.stop()

    assert code == 0
    assert "stopped" in child_output(runner)
    for pid in pids:
        assert not pid_alive(pid)


def test_children_left_running_are_killed_when_the_parent_exits(temp_dir):
    parent = python_child(
        _LEAVES_A_CHILD, temp_dir / "parent.log", _BLOCKS, str(temp_dir / "orphan.log")
    )
    wait_for(lambda: parent.returncode is not None, message="the parent exits")
    orphan = int(child_output(parent).split("pid=")[1].split()[0])

    wait_for(lambda: not pid_alive(orphan), message="the atexit hook killed the child")
    parent.stop()


def test_standalone_builds_one_config_per_node(zookeeper, temp_dir):
    standalone = Standalone(
        nodes=3,
        data_dir=temp_dir,
        zk_port=zookeeper.port,
        api_port=19644,
        node_overrides={"log": {"fsync": "never"}, "zk_session_timeout_s": 2.0},
    )

    second = standalone.node(2).config
    assert (second.broker_id, second.api_port, second.data_dir) == (
        2, 19645, str(temp_dir / "node-2"),
    )  # fmt: skip
    assert second.log.fsync == "never"
    assert second.log.segment_bytes == DEFAULT_SEGMENT_BYTES
    assert second.zk_session_timeout_s == 2.0
    assert second.zk_connect == zookeeper.connect_string
    assert ("node-3 api", "http://127.0.0.1:19646") in standalone.endpoints()
    with pytest.raises(InvalidRequestError):
        standalone.node(4)
    with pytest.raises(ConfigError, match="fsink"):
        Standalone(nodes=1, data_dir=temp_dir, node_overrides={"log": {"fsink": "never"}})


def test_standalone_resolves_a_relative_data_dir_for_its_node_configs(temp_dir, monkeypatch):
    monkeypatch.chdir(temp_dir)
    standalone = Standalone(nodes=1, data_dir="relative", api_port=free_port())

    config = standalone.node(1).config
    assert standalone.data_dir == temp_dir / "relative"
    assert config.data_dir == str(temp_dir / "relative" / "node-1")
    assert config.lake.uri == str(temp_dir / "relative" / "lake")


def test_standalone_names_every_taken_port_and_starts_nothing(temp_dir):
    with contextlib.ExitStack() as stack:
        zk, api = (stack.enter_context(socket.socket()) for _ in range(2))
        for sock in (zk, api):
            sock.bind(("127.0.0.1", 0))
            sock.listen()
        zk_port, api_port = zk.getsockname()[1], api.getsockname()[1]
        standalone = Standalone(
            nodes=1,
            data_dir=temp_dir / "data",
            nats_port=free_port(),
            zk_port=zk_port,
            api_port=api_port,
            liftbridge_port=free_port(),
        )
        with pytest.raises(PortInUseError) as raised:
            standalone.start()

    assert [(p.kind, p.port) for p in raised.value.busy] == [
        (PORT_ZOOKEEPER, zk_port),
        (PORT_NODE_API, api_port),
    ]
    assert f"port {zk_port} (ZooKeeper)" in raised.value.message
    assert not (temp_dir / "data").exists()
    assert not [p.name for p in (standalone.nats, standalone.zookeeper) if p.is_running()]


# -- child processes ------------------------------------------------------------------------


def test_stop_escalates_to_sigkill_for_the_whole_group_when_sigterm_is_ignored(temp_dir):
    child = python_child(_IGNORES_SIGTERM, temp_dir / "stubborn.log")
    child.wait_ready(lambda: said_ready(child), CHILD_READY_TIMEOUT_S)
    grandchild = int(child_output(child).split("grandchild=")[1].split()[0])

    code = child.stop(timeout_s=0.2)

    assert code == -signal.SIGKILL
    assert_gone(child.pid)
    wait_for(lambda: not pid_alive(grandchild), message="the grandchild killed with the group")
    assert child not in live_children()


def test_stop_is_graceful_first(temp_dir):
    child = python_child(_BLOCKS, temp_dir / "polite.log")
    child.wait_ready(lambda: said_ready(child), CHILD_READY_TIMEOUT_S)

    assert child.stop() == -signal.SIGTERM
    assert_gone(child.pid)


def test_wait_ready_fails_fast_with_the_log_tail_when_the_child_exits(temp_dir):
    code = "import sys; print('cannot bind: address in use', flush=True); sys.exit(3)"
    child = python_child(code, temp_dir / "failing.log")

    with pytest.raises(ProcessStartError) as raised:
        child.wait_ready(lambda: False, timeout_s=120)

    assert "exited with status 3" in str(raised.value)
    assert "cannot bind: address in use" in str(raised.value)
    child.stop()


def test_pause_and_resume(temp_dir):
    child = python_child(_BLOCKS, temp_dir / "paused.log")
    child.wait_ready(lambda: said_ready(child), CHILD_READY_TIMEOUT_S)
    try:
        child.pause()
        wait_for(lambda: proc_state(child.pid) == "T", message="the child stopped")
        child.resume()
        wait_for(lambda: proc_state(child.pid) != "T", message="the child running again")
        child.pause()
    finally:
        assert child.stop() == -signal.SIGTERM  # a paused child still stops cleanly
    assert_gone(child.pid)


# -- clear errors ---------------------------------------------------------------------------


def test_missing_java_is_a_clear_error(temp_dir, monkeypatch):
    before = set(live_children())
    explicit = ZooKeeperServer(free_port(), temp_dir / "zk", java=temp_dir / "no-such-java")
    with pytest.raises(ProcessStartError, match="no-such-java"):
        explicit.start()

    monkeypatch.setenv("PATH", str(temp_dir))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(ProcessStartError, match=r"java not found .*Java 17 or newer"):
        ZooKeeperServer(free_port(), temp_dir / "zk").start()
    assert set(live_children()) == before


def test_old_java_is_refused(temp_dir):
    fake_java = temp_dir / "java"
    fake_java.write_text(
        "#!/bin/sh\necho 'openjdk version \"11.0.2\" 2019-01-15' >&2\necho 'OpenJDK' >&2\n"
    )
    fake_java.chmod(fake_java.stat().st_mode | stat.S_IXUSR)

    with pytest.raises(ProcessStartError, match=r"Java 11; .*Java 17 or newer"):
        ZooKeeperServer(free_port(), temp_dir / "zk", java=fake_java).start()


def test_java_8_version_string_is_parsed(temp_dir):
    fake_java = temp_dir / "java8"
    fake_java.write_text("#!/bin/sh\necho 'java version \"1.8.0_292\"' >&2\n")
    fake_java.chmod(fake_java.stat().st_mode | stat.S_IXUSR)
    assert java_major_version(str(fake_java)) == 8


def test_missing_nats_binary_is_a_clear_error(temp_dir):
    server = NatsServer(free_port(), temp_dir / "nats", binary=temp_dir / "no-nats-server")
    with pytest.raises(ProcessStartError, match="no-nats-server"):
        server.start()


def test_local_stack_uses_free_ports_and_removes_its_temporary_directory():
    stack = Standalone.local(nodes=2)
    with stack:
        urls = stack.servers.split(",")
        assert len(urls) == 2 and all(http_ok(f"{url}/healthz") for url in urls)
        data_dir = stack.data_dir
        assert data_dir.is_dir()
    assert not data_dir.exists()
    parts = [stack.nats, stack.zookeeper, *stack.nodes]
    assert not [part.name for part in parts if part.is_running()]
