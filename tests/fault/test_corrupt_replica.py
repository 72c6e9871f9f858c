"""A replica whose log lost acknowledged data to corruption does not lead until it is repaired.

The scenario Kafka's KIP-966 closes: every replica of the last ISR dies at once, one of them
comes back first with a damaged log (a flipped byte far below what it had fsynced and
committed), and nobody else is there to tell. Electing it would silently drop acked records.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from coordinator.isr import read_partition_state
from coordinator.zk import ZkSession
from spark_log.config import LogConfig
from spark_log.log.checkpoint import read_offset_checkpoint
from spark_log.log.layout import HIGH_WATERMARK_FILE, RECOVERY_POINT_FILE
from tests.fault.test_failover import _check_no_acked_loss, _describe
from tests.integration.conftest import create_stream
from tests.support.waiting import wait_for

RECORDS_PER_POST = 10
POSTS_PER_HALF = 5
FIRST_SEGMENT = "00000000000000000000.log"


def _publish(api: httpx.Client, stream: str, prefix: str) -> dict[str, int]:
    """acks=all publishes of a few records each; returns {value: acked offset}."""
    acked = {}
    for post in range(POSTS_PER_HALF):
        values = [f"{prefix}-{post}-{i}" for i in range(RECORDS_PER_POST)]
        resp = api.post(
            f"/v1/streams/{stream}/partitions/0/records",
            json={"records": [{"value": v} for v in values]},
            params={"encoding": "utf-8"},
        )
        assert resp.status_code == 200, resp.text
        acked.update(zip(values, resp.json()["offsets"], strict=True))
    return acked


def _partition_dir(node, stream: str) -> Path:
    (found,) = (Path(node.config.data_dir) / "streams").glob(f"{stream}@*")
    return found / "0"


def _local_view(node, stream: str) -> dict:
    with httpx.Client(base_url=node.api_url, timeout=10) as api:
        return api.get(f"/v1/streams/{stream}/partitions/0").json()


def _flip_byte(path: Path, position: int) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)
        f.seek(position)
        f.write(bytes([byte[0] ^ 0xFF]))


def _all_isr(node, stream: str) -> bool:
    return sorted(_describe(node, stream)["isr"]) == [1, 2, 3]


def _publish_then_restart(leader, victim, stream: str) -> tuple[dict[str, int], int]:
    """Half the records, a clean restart of the victim (its recovery point moves to 50), the
    other half; the acked records and the victim's segment size before the second half."""
    directory = _partition_dir(victim, stream)
    with httpx.Client(base_url=leader.api_url, timeout=30) as api:
        acked = _publish(api, stream, "first")
        wait_for(
            lambda: _local_view(victim, stream)["log_end_offset"] == 50,
            20,
            message="the victim holds the first half",
        )
        victim.stop()
        victim.start()
        wait_for(lambda: _all_isr(leader, stream), 60, message="the victim rejoins")
        assert read_offset_checkpoint(directory / RECOVERY_POINT_FILE) == 50
        first_half_bytes = (directory / FIRST_SEGMENT).stat().st_size
        acked |= _publish(api, stream, "second")
    wait_for(
        lambda: read_offset_checkpoint(directory / HIGH_WATERMARK_FILE) == 100,
        20,
        message="the victim checkpointed the HW past every acked record",
    )
    return acked, first_half_bytes


def _assert_offline_and_nothing_served_as_missing(victim, stream: str) -> None:
    wait_for(
        lambda: _describe(victim, stream)["leader"] == -1,
        60,
        message="offline: the only live replica lost acknowledged data",
    )
    assert victim.broker_id not in _describe(victim, stream)["isr"]
    view = _local_view(victim, stream)
    assert view["role"] == "offline"
    cut = view["log_end_offset"]
    assert 0 < cut < 50
    assert view["recovery_loss"] == {"first_lost_offset": cut, "durable_end_offset": 100}
    text = victim.log_path.read_text()
    assert "LOST DURABLE DATA" in text and "it will not lead until it has caught up" in text
    with httpx.Client(base_url=victim.api_url, timeout=10) as api:
        url = f"/v1/streams/{stream}/partitions/0/records"
        assert api.get(url, params={"offset": cut}).status_code == 421  # an error, not "empty"
        beyond = api.get(url, params={"offset": 99, "from_follower": "true"})
        assert beyond.status_code != 200


@pytest.mark.slow
async def test_a_replica_with_a_corrupt_log_does_not_lead_until_repaired(
    make_node, zookeeper, stream_name
):
    log_config = LogConfig(hw_checkpoint_interval_ms=100)
    nodes = [make_node(i, replica_lag_time_max_s=3.0, log=log_config) for i in (1, 2, 3)]
    with httpx.Client(base_url=nodes[0].api_url, timeout=30) as api:
        created = create_stream(api, stream_name, replication_factor=3)
    leader = next(n for n in nodes if n.broker_id == created["partitions"][0]["leader"])
    victim = next(n for n in nodes if n is not leader)
    others = [n for n in nodes if n is not victim]
    acked, first_half_bytes = _publish_then_restart(leader, victim, stream_name)

    for node in (victim, *others):  # all at once, well within a session timeout
        node.kill()
    with ZkSession(zookeeper.connect_string, victim.config.zk_root) as zk:
        state, _version = read_partition_state(zk, stream_name, 0)
    assert victim.broker_id in state.isr, "the victim must be in the last ISR to matter"
    segment = _partition_dir(victim, stream_name) / FIRST_SEGMENT
    _flip_byte(segment, first_half_bytes // 2)  # bit rot, far below what was fsynced

    victim.start()
    _assert_offline_and_nothing_served_as_missing(victim, stream_name)

    for node in others:
        node.start()
    wait_for(
        lambda: _describe(victim, stream_name)["leader"] in (1, 2, 3),
        60,
        message="a healthy ISR member leads again",
    )
    assert _describe(victim, stream_name)["leader"] != victim.broker_id
    wait_for(
        lambda: _all_isr(victim, stream_name),
        60,
        message="the victim repaired itself from the leader and rejoined the ISR",
    )
    assert _local_view(victim, stream_name)["recovery_loss"] is None
    assert "back in the ISR after losing offsets" in victim.log_path.read_text()
    await _check_no_acked_loss(nodes, stream_name, acked)


def test_a_sole_replica_with_a_corrupt_log_keeps_serving_what_is_left(make_node, stream_name):
    node = make_node(log=LogConfig(hw_checkpoint_interval_ms=100))
    with httpx.Client(base_url=node.api_url, timeout=30) as api:
        create_stream(api, stream_name)  # replication factor 1: no other copy exists
        _publish(api, stream_name, "only")
    directory = _partition_dir(node, stream_name)
    wait_for(
        lambda: read_offset_checkpoint(directory / HIGH_WATERMARK_FILE) == 50,
        20,
        message="the HW checkpoint covers every acked record",
    )
    node.kill()
    _flip_byte(directory / FIRST_SEGMENT, (directory / FIRST_SEGMENT).stat().st_size // 2)
    node.start()
    view = _local_view(node, stream_name)
    assert view["role"] == "leader"  # offline forever would help nobody
    assert view["recovery_loss"] is None
    assert 0 < view["log_end_offset"] < 50
    assert "no other replica exists" in node.log_path.read_text()
