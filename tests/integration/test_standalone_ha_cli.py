"""`liftlog standalone --ha` as a user runs it: a 3-server NATS cluster, a 3-server ZooKeeper
ensemble, SeaweedFS and three nodes come up; an RF=3 stream takes acked publishes; each node
advertises its own API URL and the NATS server it is attached to."""

from __future__ import annotations

import re
import signal
import subprocess
import threading
from pathlib import Path

import httpx
import pytest

from liftlog.embedded.ports import free_port_block
from tests.integration.test_standalone_cli import LIFTLOG, STARTUP_TIMEOUT_S, _cli
from tests.waiting import wait_for

HA_SIZE = 3
STOP_TIMEOUT_S = 60
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
