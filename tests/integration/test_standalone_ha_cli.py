"""`liftlog standalone --ha` as a user runs it: a 3-server NATS cluster, a 3-server ZooKeeper
ensemble, SeaweedFS and three nodes come up; an RF=3 stream takes acked publishes; each node
advertises its own API URL and the NATS server it is attached to; a NATS server and a
ZooKeeper server killed with SIGKILL are reported and restarted while the stack keeps
serving."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from liftlog.embedded.ports import free_port_block
from tests.integration.test_standalone_cli import (
    LIFTLOG,
    STARTUP_TIMEOUT_S,
    _cli,
    _processes_mentioning,
)
from tests.waiting import wait_for

HA_SIZE = 3
STOP_TIMEOUT_S = 60
# a restart waits 1 s of backoff, then the JVM or nats-server starts and rejoins its peers
RESTART_TIMEOUT_S = 120
ENDPOINT = re.compile(r"^(\S+(?: \S+)?)\s+(\S+://\S+|[\d.]+:\d+(?:,[\d.]+:\d+)*)$")


class HaStandalone:
    """``liftlog standalone --ha`` on free port blocks; a thread collects its output."""

    def __init__(self, data_dir: Path) -> None:
        self.nats_port = free_port_block(HA_SIZE)
        self.zk_port = free_port_block(HA_SIZE)
        self.api_port = free_port_block(HA_SIZE)
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            [
                LIFTLOG, "standalone", "--ha", "--data-dir", str(data_dir),
                "--nats-port", str(self.nats_port), "--zk-port", str(self.zk_port),
                "--api-port", str(self.api_port),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip())

    def wait_ready(self) -> None:
        def ready() -> bool:
            if self.proc.poll() is not None and not self._reader.is_alive():
                pytest.fail("standalone --ha exited:\n" + "\n".join(self.lines))
            return "ready; Ctrl-C stops everything" in self.lines

        wait_for(ready, STARTUP_TIMEOUT_S * 2, message="standalone --ha ready")

    def wait_line(self, pattern: str, timeout_s: float = RESTART_TIMEOUT_S) -> re.Match[str]:
        """The first output line matching ``pattern``; fails early if the launcher exits."""

        def found() -> re.Match[str] | None:
            for line in list(self.lines):
                if match := re.search(pattern, line):
                    return match
            if self.proc.poll() is not None and not self._reader.is_alive():
                pytest.fail(f"standalone --ha exited before {pattern!r}:\n" + "\n".join(self.lines))
            return None

        match: re.Match[str] | None = wait_for(found, timeout_s, message=f"a line like {pattern!r}")
        assert match is not None
        return match

    def endpoints(self) -> dict[str, str]:
        return {m[1]: m[2] for line in self.lines if (m := ENDPOINT.match(line))}

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        code = self.proc.wait(timeout=STOP_TIMEOUT_S)
        self._reader.join(timeout=10)
        return code


def test_standalone_ha_runs_the_cluster_and_acks_rf3_publishes(temp_dir: Path) -> None:
    stack = HaStandalone(temp_dir)
    try:
        stack.wait_ready()
        endpoints = stack.endpoints()
        nats = [endpoints[f"nats-{i}"] for i in range(1, HA_SIZE + 1)]
        assert nats == [f"nats://127.0.0.1:{stack.nats_port + i}" for i in range(HA_SIZE)]
        zk = ",".join(f"127.0.0.1:{stack.zk_port + i}" for i in range(HA_SIZE))
        assert endpoints["zookeeper"] == zk
        assert endpoints["lake"].startswith("s3://") and endpoints["s3"].startswith("http://")
        apis = [endpoints[f"node-{i} api"] for i in range(1, HA_SIZE + 1)]

        created = _cli(
            "stream", "create", "ha-orders", "--subject", "ha.orders", "--replication-factor",
            "3", server=apis[0],
        )  # fmt: skip
        assert created.returncode == 0, created.stderr
        published = _cli("publish", "ha-orders", server=apis[1], stdin="one\ntwo\nthree\n")
        assert published.returncode == 0, published.stderr
        assert "ha-orders/0 offset=2" in published.stdout

        described = httpx.get(f"{apis[2]}/v1/streams/ha-orders", timeout=30).json()
        [partition] = described["partitions"]
        assert sorted(partition["replicas"]) == [1, 2, 3]
        wait_for(
            lambda: (
                httpx.get(f"{apis[2]}/v1/streams/ha-orders", timeout=30).json()["partitions"][0][
                    "high_watermark"
                ]
                == 3
            ),
            message="the three publishes committed",
        )
        cluster = httpx.get(f"{apis[0]}/v1/cluster", timeout=30).json()
        advertised = {b["broker_id"]: (b["api_url"], b["nats_url"]) for b in cluster["brokers"]}
        assert advertised == {i + 1: (apis[i], nats[i]) for i in range(HA_SIZE)}
        assert stack.stop() == 0
    finally:
        if stack.proc.poll() is None:
            stack.proc.kill()
            stack.proc.wait(timeout=STOP_TIMEOUT_S)


def _the_one_process(config_file: Path) -> int:
    """The PID of the server started with ``config_file`` (its path is on the command line)."""
    [pid] = _processes_mentioning(str(config_file))
    return pid


def _partition(api: str, stream: str) -> dict[str, Any]:
    partition: dict[str, Any] = httpx.get(f"{api}/v1/streams/{stream}", timeout=30).json()[
        "partitions"
    ][0]
    return partition


def _cluster_whole(api: str) -> bool:
    """Every node registered again and the partition's ISR back to all three replicas."""
    try:
        brokers = httpx.get(f"{api}/v1/cluster", timeout=30).json()["brokers"]
        isr = _partition(api, "ha-survivor")["isr"]
    except httpx.HTTPError:
        return False
    return len(brokers) == HA_SIZE and sorted(isr) == [1, 2, 3]


def test_standalone_ha_restarts_a_killed_nats_server_and_zookeeper_server(temp_dir: Path) -> None:
    """SIGKILL one NATS server and one ZooKeeper server: the launcher reports and restarts
    each, stays up, and an acks=all publish to an RF=3 stream succeeds afterwards; SIGINT
    then stops every process it started."""
    stack = HaStandalone(temp_dir)
    try:
        stack.wait_ready()
        apis = [stack.endpoints()[f"node-{i} api"] for i in range(1, HA_SIZE + 1)]
        created = _cli(
            "stream", "create", "ha-survivor", "--subject", "ha.survivor",
            "--replication-factor", "3", server=apis[0],
        )  # fmt: skip
        assert created.returncode == 0, created.stderr

        nats_2 = _the_one_process(temp_dir / "nats" / "server-2" / "nats-server.conf")
        zk_3 = _the_one_process(temp_dir / "zookeeper" / "server-3" / "zoo.cfg")
        os.kill(nats_2, signal.SIGKILL)
        os.kill(zk_3, signal.SIGKILL)

        nats_name = rf"nats-server liftlog-2 :{stack.nats_port + 1}"
        zk_name = rf"zookeeper 3 :{stack.zk_port + 2}"
        for name in (nats_name, zk_name):
            stack.wait_line(rf"^{name} exited with code -9; restarting in 1\.0 s \(restart 1\)")
        new_nats = int(stack.wait_line(rf"^{nats_name} restarted \(pid (\d+)\)")[1])
        new_zk = int(stack.wait_line(rf"^{zk_name} restarted \(pid (\d+)\)")[1])
        assert stack.proc.poll() is None, "\n".join(stack.lines)
        assert not any("stopping everything" in line for line in stack.lines)
        assert _the_one_process(temp_dir / "nats" / "server-2" / "nats-server.conf") == new_nats
        assert _the_one_process(temp_dir / "zookeeper" / "server-3" / "zoo.cfg") == new_zk

        wait_for(lambda: _cluster_whole(apis[1]), RESTART_TIMEOUT_S, message="cluster whole")
        published = _cli(
            "publish", "ha-survivor", "--ack-policy", "all", server=apis[1], stdin="after\n"
        )
        assert published.returncode == 0, published.stderr
        assert "ha-survivor/0 offset=0" in published.stdout

        assert stack.stop() == 0
        assert _processes_mentioning(str(temp_dir)) == []
    finally:
        if stack.proc.poll() is None:
            stack.proc.kill()
            stack.proc.wait(timeout=STOP_TIMEOUT_S)
