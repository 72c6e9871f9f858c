"""A node whose data directory fills up: storage_error acks, nothing acknowledged lost, the
partition taking writes again by itself once space is freed, and deletion still succeeding.

The node's data directory (only the node's: ZooKeeper and NATS keep theirs elsewhere) is a
small tmpfs mounted inside the test's temp dir, filled with a filler file. Mounting needs
root; the tests skip without it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from liftlog.embedded.node import NodeProcess
from spark_log.client import Client
from spark_log.config import LogConfig
from spark_log.errors import LiftlogError
from tests.integration.conftest import NodeFactory, _node_factory, create_stream
from tests.support.rest_records import read_all_records
from tests.support.waiting import wait_for, wait_for_async

DISK_SIZE = "4m"
VALUE = "v" * 4096  # a few records fill what the filler leaves of the last pages
MAX_PUBLISHES_TO_FILL = 500
FILLER_CHUNKS = (1024 * 1024, 64 * 1024, 4096)
STREAM_DIR = "streams"


@dataclass
class SmallDisk:
    """The tmpfs holding the node's data directory, and the file that fills it."""

    mount_point: Path
    filler: Path

    def fill(self) -> None:
        """Write the filler until the file system has no page left."""
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            for chunk in FILLER_CHUNKS:
                _write_until_full(fd, bytes(chunk))
        finally:
            os.close(fd)

    def free(self) -> None:
        self.filler.unlink()


def _write_until_full(fd: int, chunk: bytes) -> None:
    while True:
        try:
            os.write(fd, chunk)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
            return


def _mount_tmpfs(mount_point: Path) -> None:
    """Mount a small tmpfs, or skip the test where mounting is not permitted."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount_point.mkdir(parents=True)
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE}", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")


@contextlib.contextmanager
def _cluster_with_small_disk(
    zookeeper: Any, nats_server: Any, root: Path, small_broker: int
) -> Iterator[tuple[NodeFactory, SmallDisk]]:
    """A node factory whose node ``small_broker`` keeps its data on a small tmpfs; every node
    is stopped (by PID) before the tmpfs is unmounted."""
    mount_point = root / f"node-{small_broker}"
    _mount_tmpfs(mount_point)
    try:
        factory = _node_factory(zookeeper, nats_server, root, f"/liftlog-{uuid.uuid4().hex[:12]}")
        try:
            yield next(factory), SmallDisk(mount_point, mount_point / "filler")
        finally:
            next(factory, None)
    finally:
        subprocess.run(["umount", str(mount_point)], check=True)


@pytest.fixture
def full_disk_node(
    zookeeper: Any, nats_server: Any, tmp_path: Path
) -> Iterator[tuple[NodeProcess, SmallDisk]]:
    """Node 1, alone, with its data directory on a small tmpfs."""
    with _cluster_with_small_disk(zookeeper, nats_server, tmp_path, 1) as (make, disk):
        yield make(1, log=LogConfig(fsync="always")), disk


@pytest.fixture
def full_disk_follower(
    zookeeper: Any, nats_server: Any, tmp_path: Path
) -> Iterator[tuple[NodeProcess, NodeProcess, SmallDisk]]:
    """Nodes 1 and 2; node 2's data directory is on a small tmpfs."""
    with _cluster_with_small_disk(zookeeper, nats_server, tmp_path, 2) as (make, disk):
        yield make(1), make(2), disk


async def _publish_until_refused(client: Client, stream: str, acked: dict[str, int]) -> str:
    """Publish until the node refuses; returns the refusal's code."""
    for i in range(MAX_PUBLISHES_TO_FILL):
        value = f"fill-{i}-{VALUE}"
        try:
            ack = await client.publish(stream, value, timeout_s=5)
        except LiftlogError as exc:
            return exc.code
        assert ack is not None
        acked[value] = ack.offset
    raise AssertionError(f"{MAX_PUBLISHES_TO_FILL} publishes stored on a full disk")


async def _publish_with_ids_until_refused(
    client: Client, stream: str, acked: dict[str, int]
) -> str:
    """Publish, each record with its value as msg id, until the node refuses with
    ``storage_error``; returns the refused record's value (its msg id)."""
    for i in range(MAX_PUBLISHES_TO_FILL):
        value = f"fill-{i}-{VALUE}"
        try:
            ack = await client.publish(stream, value, msg_id=value, timeout_s=5)
        except LiftlogError as exc:
            assert exc.code == "storage_error"
            return value
        assert ack is not None and not ack.duplicate
        acked[value] = ack.offset
    raise AssertionError(f"{MAX_PUBLISHES_TO_FILL} publishes stored on a full disk")


async def _stored_once(client: Client, stream: str, value: str) -> int:
    """Publish ``value`` with its msg id after a refusal: stored (not answered as a duplicate
    of a record that never reached the log), then a duplicate of itself; its offset."""
    ack = await client.publish(stream, value, msg_id=value, timeout_s=5)
    assert ack is not None and not ack.duplicate, f"{value[:20]} answered as a duplicate"
    again = await client.publish(stream, value, msg_id=value, timeout_s=5)
    assert again is not None and again.duplicate and again.offset == ack.offset
    return ack.offset


def _partition(api: httpx.Client, stream: str) -> dict[str, Any]:
    resp = api.get(f"/v1/streams/{stream}")
    assert resp.status_code == 200, resp.text
    partition: dict[str, Any] = resp.json()["partitions"][0]
    return partition


def _metric(api: httpx.Client, line_start: str) -> float | None:
    for line in api.get("/metrics").text.splitlines():
        if line.startswith(line_start):
            return float(line.rsplit(" ", 1)[1])
    return None


def _read_all(api: httpx.Client, stream: str) -> dict[str, int]:
    """Value -> offset of every stored record; a value stored twice keeps its last offset."""
    records = read_all_records(api, stream, max_records=1000)
    return {r["value"]: r["offset"] for r in records}


async def test_partition_takes_writes_again_once_space_is_freed(full_disk_node, stream_name):
    node, disk = full_disk_node
    acked: dict[str, int] = {}
    with httpx.Client(base_url=node.api_url, timeout=30) as api:
        create_stream(api, stream_name)
        async with Client(node.api_url, ack_timeout_s=5) as client:
            for i in range(20):
                ack = await client.publish(stream_name, f"before-{i}", timeout_s=5)
                assert ack is not None
                acked[f"before-{i}"] = ack.offset
            disk.fill()
            refused_values = [await _publish_with_ids_until_refused(client, stream_name, acked)]

            started = time.monotonic()
            with pytest.raises(LiftlogError) as refused:
                await client.publish(stream_name, "while-full", timeout_s=5)
            assert refused.value.code == "storage_error"
            assert time.monotonic() - started < 2, "a stalled partition must refuse at once"
            for i in range(3):
                value = f"stalled-{i}"
                with pytest.raises(LiftlogError) as refused:
                    await client.publish(stream_name, value, msg_id=value, timeout_s=5)
                assert refused.value.code == "storage_error"
                refused_values.append(value)

            stalled = wait_for(
                lambda: (_partition(api, stream_name).get("storage_error") or {}).get("retries"),
                message="describe showing the storage stall's retries",
            )
            assert stalled >= 1
            assert _partition(api, stream_name)["offline"] is True
            assert _metric(api, "liftlog_storage_stalled_partitions ") == 1.0
            assert _metric(api, "liftlog_storage_retries_total{") >= 1

            disk.free()
            await wait_for_async(
                lambda: _partition(api, stream_name)["storage_error"] is None,
                timeout_s=20,
                message="the partition taking writes again",
            )
            for value in refused_values:  # the client's retries, same msg ids
                acked[value] = await _stored_once(client, stream_name, value)
            for i in range(20):
                ack = await client.publish(stream_name, f"after-{i}", timeout_s=5)
                assert ack is not None
                acked[f"after-{i}"] = ack.offset

        assert _partition(api, stream_name)["offline"] is False
        assert _metric(api, "liftlog_storage_stalled_partitions ") == 0.0
        stored = _read_all(api, stream_name)
        # dense, no torn batch, and each value once: a value stored twice would leave one of
        # its offsets out of the map
        assert sorted(stored.values()) == list(range(len(stored)))
        for value, offset in acked.items():
            assert stored.get(value) == offset, f"acked {value[:20]}@{offset} lost or moved"


async def test_deleting_a_stream_on_a_full_disk_succeeds(full_disk_node, stream_name):
    node, disk = full_disk_node
    with httpx.Client(base_url=node.api_url, timeout=30) as api:
        create_stream(api, stream_name)
        async with Client(node.api_url, ack_timeout_s=5) as client:
            await client.publish(stream_name, "stored", timeout_s=5)
            disk.fill()
            assert await _publish_until_refused(client, stream_name, {}) == "storage_error"

        resp = api.delete(f"/v1/streams/{stream_name}")
        assert resp.status_code == 200, resp.text
        assert api.get(f"/v1/streams/{stream_name}").status_code == 404
        stream_dirs = disk.mount_point / STREAM_DIR
        wait_for(
            lambda: not any(p.name.startswith(f"{stream_name}@") for p in _dirs(stream_dirs)),
            message="the stream's files removed",
        )


def _dirs(path: Path) -> list[Path]:
    with contextlib.suppress(FileNotFoundError):
        return list(path.iterdir())
    return []


def _replica(node: NodeProcess, stream: str, partition: int) -> dict[str, Any]:
    resp = httpx.get(f"{node.api_url}/v1/streams/{stream}/partitions/{partition}", timeout=30)
    assert resp.status_code == 200, resp.text
    view: dict[str, Any] = resp.json()
    return view


def _led_by(api: httpx.Client, stream: str, broker: int) -> int | None:
    """A partition ``broker`` leads with both replicas in sync, if there is one yet."""
    for partition in api.get(f"/v1/streams/{stream}").json()["partitions"]:
        if partition["leader"] == broker and len(partition["isr"]) == 2:
            return int(partition["partition"])
    return None


async def test_a_follower_fetches_again_once_its_disk_has_space(full_disk_follower, stream_name):
    leader, follower, disk = full_disk_follower
    with httpx.Client(base_url=leader.api_url, timeout=30) as api:
        wait_for(
            lambda: len(api.get("/v1/cluster").json()["brokers"]) == 2,
            30,
            message="both brokers live",
        )
        create_stream(api, stream_name, partitions=2, replication_factor=2, ack_policy="leader")
        (p,) = wait_for(
            lambda: [q for q in [_led_by(api, stream_name, 1)] if q is not None],
            message="a partition led by broker 1 with broker 2 in sync",
        )
        async with Client(leader.api_url, ack_timeout_s=5) as client:
            for i in range(5):
                await client.publish(stream_name, f"before-{i}", partition=p, timeout_s=5)
            wait_for(
                lambda: _replica(follower, stream_name, p)["log_end_offset"] == 5,
                message="the follower holding the first records",
            )
            disk.fill()
            for i in range(MAX_PUBLISHES_TO_FILL // 10):
                await client.publish(stream_name, f"{i}-{VALUE}", partition=p, timeout_s=5)
            wait_for(
                lambda: (_replica(follower, stream_name, p)["storage_error"] or {}).get("retries"),
                message="the follower stalled by its full disk, retrying",
            )
            assert _replica(follower, stream_name, p)["offline"] is True

            disk.free()
            leo = _replica(leader, stream_name, p)["log_end_offset"]
            wait_for(
                lambda: _replica(follower, stream_name, p)["log_end_offset"] == leo,
                timeout_s=30,
                message="the follower caught up without a restart",
            )
        view = _replica(follower, stream_name, p)
        assert (view["storage_error"], view["offline"]) == (None, False)
