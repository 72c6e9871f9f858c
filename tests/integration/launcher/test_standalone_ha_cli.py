"""`liftlog standalone --ha` as a user runs it: a 3-server NATS cluster, a 3-server ZooKeeper
ensemble, SeaweedFS and three nodes come up; an RF=3 stream takes acked publishes; each node
advertises its own API URL and the NATS server it is attached to; a NATS server and a
ZooKeeper server killed with SIGKILL are reported and restarted while the stack keeps
serving."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest

from liftlog.embedded.ports import free_port_block
from tests.integration.launcher.test_standalone_cli import (
    STARTUP_TIMEOUT_S,
    Standalone,
    _cli,
    _processes_mentioning,
)
from tests.support.stacks import plain_stack_only
from tests.support.waiting import wait_for

pytestmark = plain_stack_only(
    "runs its own plain `liftlog standalone --ha` stack, not the session's"
)

HA_SIZE = 3
STOP_TIMEOUT_S = 60
# a restart waits 1 s of backoff, then the JVM or nats-server starts and rejoins its peers
RESTART_TIMEOUT_S = 120
ENDPOINT = re.compile(r"^(\S+(?: \S+)?)\s+(\S+://\S+|[\d.]+:\d+(?:,[\d.]+:\d+)*)$")


class HaStandalone(Standalone):
    """``liftlog standalone --ha`` on free port blocks; a thread collects its output."""

    def __init__(self, data_dir: Path) -> None:
        self.nats_port = free_port_block(HA_SIZE)
        self.zk_port = free_port_block(HA_SIZE)
        super().__init__(
            data_dir, "--ha", nodes=HA_SIZE, nats_port=self.nats_port, zk_port=self.zk_port
        )

    def wait_ready(self) -> None:
        self.wait_line(r"^ready; Ctrl-C stops everything", STARTUP_TIMEOUT_S * 2)

    def wait_line(self, pattern: str, timeout_s: float = RESTART_TIMEOUT_S) -> re.Match[str]:
        """As the plain launcher's, with time for a restart's backoff and rejoin."""
        return super().wait_line(pattern, timeout_s)

    def endpoints(self) -> dict[str, str]:
        return {m[1]: m[2] for line in self.lines if (m := ENDPOINT.match(line))}


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


@pytest.mark.slow
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
