"""A node whose ``lake.uri`` is not the cluster's lake does not export there.

Two nodes, each leading one partition; node 2 is configured with its own lake directory (what
a per-node default path on separate machines amounts to). Node 1 claims the lake and exports;
node 2 refuses, says why, keeps its records (retention cannot pass the lake offset), and
exports into the shared lake once restarted with the right ``lake.uri``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from deltalake import DeltaTable

from spark_log.config import LakeConfig
from spark_log.lake.identity import IDENTITY_FILE
from tests.integration.conftest import create_stream, node_client
from tests.support.waiting import wait_for

MANUAL = {"export_interval_s": 3600.0, "export_min_bytes": 1 << 40, "retry_backoff_max_s": 1.0}


def _partitions(api: httpx.Client, name: str) -> dict[int, dict[str, Any]]:
    described = api.get(f"/v1/streams/{name}").json()
    return {p["partition"]: p for p in described["partitions"]}


def _publish(leader_url: str, name: str, partition: int, count: int) -> None:
    path = f"/v1/streams/{name}/partitions/{partition}/records"
    body = {"records": [{"value": f"p{partition}-{i}"} for i in range(count)]}
    with node_client(leader_url, timeout=60) as api:
        resp = api.post(path, json=body, params={"encoding": "utf-8"})
    assert resp.status_code == 200, resp.text


def test_a_node_with_another_lake_does_not_export_until_its_uri_is_fixed(
    make_node, stream_name, tmp_path: Path
):
    shared, stray = tmp_path / "lake", tmp_path / "node-2-own-lake"
    node1 = make_node(1, lake=LakeConfig(uri=str(shared), **MANUAL))
    with node_client(node1.api_url, timeout=60) as api:
        # the first exporter claims the lake: let node 1 be first, alone
        create_stream(api, f"{stream_name}-first", partitions=1)
        wait_for(lambda: (shared / IDENTITY_FILE).exists(), 30, message="node 1 claims the lake")
        node2 = make_node(2, lake=LakeConfig(uri=str(stray), **MANUAL))
        create_stream(api, stream_name, partitions=2, replication_factor=1)
        wait_for(
            lambda: {p["leader"] for p in _partitions(api, stream_name).values()} == {1, 2},
            30,
            message="each node leads one partition",
        )
        leaders = {p: v["leader"] for p, v in _partitions(api, stream_name).items()}
        urls = {1: node1.api_url, 2: node2.api_url}
        for p in (0, 1):
            _publish(urls[leaders[p]], stream_name, p, 10)
        flushed = api.post(f"/v1/streams/{stream_name}/flush")
        assert flushed.status_code == 503, flushed.text
        assert flushed.json()["error"]["code"] == "lake_error"
        assert "will not export" in flushed.json()["error"]["message"]
        lake_offsets = {p: v["lake_offset"] for p, v in _partitions(api, stream_name).items()}
        mine = next(p for p, b in leaders.items() if b == 1)
        theirs = next(p for p, b in leaders.items() if b == 2)
        assert lake_offsets[mine] == 10 and lake_offsets[theirs] in (None, 0)
        record = json.loads((shared / IDENTITY_FILE).read_text())
        assert not (stray / IDENTITY_FILE).exists(), "the stray lake must not be claimed"
        log2 = Path(node2.log_path).read_text()
        assert "will not export" in log2 and record["lake_id"] in log2

        node2.stop()
        node2 = make_node(2, lake=LakeConfig(uri=str(shared), **MANUAL))
        wait_for(
            lambda: api.post(f"/v1/streams/{stream_name}/flush").status_code == 200,
            60,
            message="node 2 exports once it points at the shared lake",
        )
        assert {p: v["lake_offset"] for p, v in _partitions(api, stream_name).items()} == {
            0: 10,
            1: 10,
        }
        uri = api.get(f"/v1/streams/{stream_name}").json()["lake"]["uri"]
    table = (
        DeltaTable(uri)
        .to_pyarrow_table()
        .sort_by([("partition", "ascending"), ("offset", "ascending")])
    )
    assert table.column("value").to_pylist() == [
        f"p{p}-{i}".encode() for p in (0, 1) for i in range(10)
    ]
