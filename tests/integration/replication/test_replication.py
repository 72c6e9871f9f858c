"""Replication on a real 3-node cluster: followers fetch over NATS, HW = min ISR LEO."""

from __future__ import annotations

from spark_log.client import Client
from tests.integration.conftest import create_stream, node_client
from tests.support.waiting import wait_for


def _records(node, stream: str) -> dict:
    with node_client(node.api_url, timeout=30) as api:
        return api.get(
            f"/v1/streams/{stream}/partitions/0/records",
            params={
                "offset": 0,
                "max_records": 10000,
                "encoding": "utf-8",
                "from_follower": "true",
            },
        ).json()


async def test_rf3_acks_all_replicates_to_every_replica(make_node, stream_name):
    nodes = [make_node(i) for i in (1, 2, 3)]
    with node_client(nodes[0].api_url, timeout=30) as api:
        created = create_stream(api, stream_name, replication_factor=3)
    state = created["partitions"][0]
    assert sorted(state["replicas"]) == [1, 2, 3] and sorted(state["isr"]) == [1, 2, 3]
    leader = next(n for n in nodes if n.broker_id == state["leader"])
    async with Client(leader.api_url) as client:
        acks = [await client.publish(stream_name, f"r{i}") for i in range(50)]
        batch = await client.publish_batch(stream_name, [f"b{i}" for i in range(150)])
    assert [a.offset for a in acks] == list(range(50))
    assert (batch.offset, batch.count) == (50, 150)
    # acks=all means committed: every replica holds the records (its HW follows the leader's)
    for node in nodes:
        wait_for(
            lambda node=node: _records(node, stream_name)["high_watermark"] == 200,
            20,
            message=f"broker {node.broker_id} caught up",
        )
    values = [[r["value"] for r in _records(n, stream_name)["records"]] for n in nodes]
    # describe from any broker shows the leader's view, every replica's LEO included
    follower = next(n for n in nodes if n.broker_id != leader.broker_id)
    with node_client(follower.api_url, timeout=30) as api:
        described = api.get(f"/v1/streams/{stream_name}").json()["partitions"][0]
    assert described["high_watermark"] == 200
    assert described["replica_log_end_offsets"] == {"1": 200, "2": 200, "3": 200}
    assert values[0] == values[1] == values[2]
    assert values[0][:2] == ["r0", "r1"] and values[0][-1] == "b149"


async def test_follower_refuses_writes_and_plain_reads(make_node, stream_name):
    nodes = [make_node(i) for i in (1, 2)]
    with node_client(nodes[0].api_url, timeout=30) as api:
        created = create_stream(api, stream_name, replication_factor=2)
    leader_id = created["partitions"][0]["leader"]
    follower = next(n for n in nodes if n.broker_id != leader_id)
    with node_client(follower.api_url, timeout=30) as api:
        url = f"/v1/streams/{stream_name}/partitions/0/records"
        read = api.get(url)
        assert read.status_code == 421 and read.json()["error"]["code"] == "not_leader"
        write = api.post(url, json={"records": [{"value": "x"}]}, params={"encoding": "utf-8"})
        assert write.status_code == 421
