"""gufo-liftbridge through a leader's kill -9: it goes on publishing and loses no acked record.

The client (gufo-liftbridge 0.2.0, grpcio 1.84.0, protobuf 6.33.6: tests/support/client_venvs.py)
publishes numbered values with PublishAsync and AckPolicy.ALL to a 3-replica stream, given the
three nodes as its brokers; the partition's leader is killed with SIGKILL mid-load. Acks must
resume, and, as Kafka's acks=all promises, every value acknowledged before or after the kill
must be in the log at the offset its ack named, once; the client then reads the whole partition
back from the new leader.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from liftlog.embedded.node import NodeProcess
from tests.integration.conftest import node_client
from tests.support.client_load import RunningClient
from tests.support.client_venvs import GUFO_LIFTBRIDGE
from tests.support.gufo_calls import brokers_of, gufo, start_cluster
from tests.support.stacks import plain_stack_only
from tests.support.waiting import wait_for

pytestmark = plain_stack_only("gufo-liftbridge speaks plaintext gRPC and sends no token")

ACKS_BEFORE_KILL = 30
ACKS_AFTER_KILL = 30
RECOVERY_TIMEOUT_S = 60.0
PAGE = 1000


@pytest.fixture
def cluster(make_node: Any) -> list[NodeProcess]:
    return start_cluster(make_node)


@pytest.fixture
def load(cluster: list[NodeProcess], stream_name: str, temp_dir: Path) -> Iterator[RunningClient]:
    brokers = brokers_of(cluster)
    assert gufo(brokers, "create", name=stream_name, replication_factor=3) == "created"
    client = RunningClient(GUFO_LIFTBRIDGE, "gufo_load.py", temp_dir / "stop", brokers, stream_name)
    yield client
    client.kill()


def leader_of(nodes: list[NodeProcess], stream: str) -> NodeProcess:
    partition = gufo(brokers_of(nodes), "metadata", stream=stream)["streams"][stream]
    leader = partition["partitions"]["0"]["leader"]
    return next(n for n in nodes if str(n.broker_id) == leader)


def stored_values(node: NodeProcess, stream: str) -> list[tuple[int, str]]:
    """(offset, value) of every record of partition 0, read over REST from ``node`` (the
    leader: the records up to its high watermark)."""
    records: list[tuple[int, str]] = []
    with node_client(node.api_url) as api:
        while True:
            page = _page(api, stream, len(records))
            if not page:
                return records
            records.extend((r["offset"], r["value"]) for r in page)


def _page(api: httpx.Client, stream: str, offset: int) -> list[dict[str, Any]]:
    resp = api.get(
        f"/v1/streams/{stream}/partitions/0/records",
        params={"offset": offset, "max_records": PAGE, "encoding": "utf-8"},
    )
    assert resp.status_code == 200, resp.text
    records: list[dict[str, Any]] = resp.json()["records"]
    return records


def test_leader_kill9_while_publishing_loses_no_acked_record(
    cluster: list[NodeProcess], stream_name: str, load: RunningClient
) -> None:
    victim = leader_of(cluster, stream_name)
    survivors = [n for n in cluster if n is not victim]
    wait_for(lambda: load.count("ack") >= ACKS_BEFORE_KILL, 30, message="acks before the kill")
    victim.kill()
    at_kill = load.count("ack")
    wait_for(
        lambda: load.count("ack") >= at_kill + ACKS_AFTER_KILL,
        RECOVERY_TIMEOUT_S,
        message=f"acks after node {victim.broker_id} was killed (events: {load.events[-5:]})",
    )
    summary = load.stop()["result"]
    acked: dict[str, int] = summary["acked"]

    new_leader = leader_of(survivors, stream_name)
    assert new_leader is not victim
    stored = stored_values(new_leader, stream_name)
    assert [offset for offset, _ in stored] == list(range(len(stored)))
    at_offset = dict(stored)
    lost = {v: o for v, o in acked.items() if at_offset.get(o) != v}
    assert lost == {}, f"acked but not stored at their offsets: {lost}"
    copies = Counter(value for _, value in stored)
    assert [v for v in acked if copies[v] != 1] == []

    read = gufo(
        brokers_of(survivors),
        "subscribe",
        stream=stream_name,
        start_position="EARLIEST",
        count=len(stored),
        timeout_s=30,
    )
    assert [(m["offset"], m["value"]) for m in read] == stored
