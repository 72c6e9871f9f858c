"""The metrics an operator watches first, on a real two-node cluster: ack and fsync latency,
replication and fetch latency, ISR health and its changes, consumer group lag, memory."""

from __future__ import annotations

import json
import re
from typing import Any

from spark_log.client import Client
from tests.integration.conftest import create_stream, node_client
from tests.support.paths import REPO
from tests.support.scrape import families, scrape, total
from tests.support.waiting import wait_for

DASHBOARD = REPO / "docs" / "examples" / "grafana-dashboard.json"
METRIC_NAME = re.compile(r"\b(?:liftlog|process)_[a-z_]+\b")
SAMPLE_SUFFIXES = ("", "_total", "_bucket", "_count", "_sum")

LAG_S = 1.5
RECORDS = 20


def _leader_and_follower(make_node: Any, stream: str) -> tuple[Any, Any]:
    """Two nodes and a stream replicated on both (min ISR 2): its leader and its follower."""
    nodes = [make_node(i, replica_lag_time_max_s=LAG_S) for i in (1, 2)]
    with node_client(nodes[0].api_url) as api:
        created = create_stream(api, stream, replication_factor=2, min_isr=2)
    leader_id = created["partitions"][0]["leader"]
    leader = next(n for n in nodes if n.broker_id == leader_id)
    follower = next(n for n in nodes if n.broker_id != leader_id)
    return leader, follower


async def test_a_healthy_cluster_shows_latencies_and_no_isr_change(make_node, stream_name):
    leader, follower = _leader_and_follower(make_node, stream_name)
    async with Client(leader.api_url) as client:
        for i in range(RECORDS):
            await client.publish(stream_name, f"r{i}")
    with node_client(leader.api_url) as api:
        api.get(
            f"/v1/streams/{stream_name}/partitions/0/records", params={"offset": 0}
        ).raise_for_status()
        seen = scrape(api)
    mine = {"stream": stream_name}
    acked = total(seen, "liftlog_produce_ack_latency_seconds_count", ack_policy="all", **mine)
    assert acked == RECORDS
    assert total(seen, "liftlog_log_flush_seconds_count", **mine) >= 1
    assert total(seen, "liftlog_replication_commit_seconds_count", **mine) >= 1
    assert total(seen, "liftlog_consumer_fetch_seconds_count", **mine) == 1
    assert total(seen, "liftlog_under_replicated_partitions") == 0
    assert total(seen, "liftlog_under_min_isr_partitions") == 0
    assert total(seen, "liftlog_isr_shrinks_total", **mine) == 0
    assert total(seen, "process_resident_memory_bytes") > 0
    with node_client(follower.api_url) as api:
        assert total(scrape(api), "liftlog_replica_fetch_seconds_count", **mine) >= 1


async def test_a_stopped_follower_is_counted_out_of_the_isr_and_back(make_node, stream_name):
    leader, follower = _leader_and_follower(make_node, stream_name)
    mine = {"stream": stream_name}
    with node_client(leader.api_url) as api:
        follower.pause()  # SIGSTOP: it stops fetching, the leader shrinks it out
        try:
            wait_for(
                lambda: total(scrape(api), "liftlog_under_min_isr_partitions") == 1,
                timeout_s=30,
                message="the partition under min ISR",
            )
            seen = scrape(api)
            assert total(seen, "liftlog_under_replicated_partitions") == 1
            assert total(seen, "liftlog_isr_shrinks_total", **mine) == 1
        finally:
            follower.resume()
        wait_for(
            lambda: total(scrape(api), "liftlog_isr_expands_total", **mine) == 1,
            timeout_s=30,
            message="the follower back in the ISR",
        )
        assert total(scrape(api), "liftlog_under_replicated_partitions") == 0


async def test_consumer_group_lag_is_exported_by_its_coordinator(make_node, stream_name):
    nodes = [make_node(1)]
    group = "lagging"
    with node_client(nodes[0].api_url) as api:
        create_stream(api, stream_name)
        async with Client(nodes[0].api_url) as client:
            for i in range(10):
                await client.publish(stream_name, f"r{i}")
        plan = {"stream": stream_name, "to": "offset", "value": 3, "execute": True}
        api.post(f"/v1/groups/{group}/offsets/reset", json=plan).raise_for_status()
        lag = total(
            scrape(api),
            "liftlog_consumer_group_lag_records",
            group=group,
            stream=stream_name,
            partition="0",
        )
        exported = families(api)
    assert lag == 7  # next offset to read is 3: records 3..9 are not consumed yet
    _every_dashboard_metric_is_exported(exported)


def _every_dashboard_metric_is_exported(exported: set[str]) -> None:
    """The Grafana dashboard in docs/examples loads as a dashboard (panels with Prometheus
    queries) and asks only for metrics a node exports."""
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    assert dashboard["uid"] and len(exprs) >= len(dashboard["panels"]) >= 10
    asked = {name for expr in exprs for name in METRIC_NAME.findall(expr)}
    samples = {family + suffix for family in exported for suffix in SAMPLE_SUFFIXES}
    assert asked - samples == set(), "the dashboard asks for metrics no node exports"
    assert {"liftlog_under_replicated_partitions", "process_resident_memory_bytes"} <= asked
