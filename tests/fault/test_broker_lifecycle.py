"""Adding a broker and decommissioning one, on a real cluster.

A 4th broker joins a 3-broker cluster; a whole-stream JSON plan (``liftlog stream reassign
--plan``) moves replicas onto it. Then ``liftlog cluster decommission`` empties broker 1: every
partition ends with no replica on it, its data is deleted, and every acknowledged record is
still there.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx

from tests.integration.conftest import create_stream
from tests.support.waiting import wait_for

LIFTLOG = str(Path(sys.executable).parent / "liftlog")
CLI_TIMEOUT_S = 60.0
MOVE_TIMEOUT_S = 60.0
PARTITIONS = 2
RECORDS_PER_POST = 20
RETIRED = 1
NEW_BROKER = 4


def _cli(*argv: str) -> str:
    done = subprocess.run(
        [LIFTLOG, *argv], capture_output=True, text=True, timeout=CLI_TIMEOUT_S, check=True
    )
    return done.stdout


def _partitions(api: httpx.Client, stream: str) -> list[dict]:
    return api.get(f"/v1/streams/{stream}").json()["partitions"]


def _settled(api: httpx.Client, stream: str) -> bool:
    return not api.get(f"/v1/streams/{stream}/reassign").json()["partitions"]


def _leader_url(api: httpx.Client, stream: str, p: int) -> str:
    leader = _partitions(api, stream)[p]["leader"]
    brokers = api.get("/v1/cluster").json()["brokers"]
    return next(b["api_url"] for b in brokers if b["broker_id"] == leader)


def _publish(api: httpx.Client, stream: str, prefix: str) -> dict[tuple[int, str], int]:
    acked = {}
    for p in range(PARTITIONS):
        values = [f"{prefix}-{p}-{i}" for i in range(RECORDS_PER_POST)]
        resp = httpx.post(
            f"{_leader_url(api, stream, p)}/v1/streams/{stream}/partitions/{p}/records",
            json={"records": [{"value": v} for v in values]},
            params={"encoding": "utf-8", "ack_policy": "all"},
            timeout=30,
        )
        assert resp.status_code == 200, resp.text
        acked.update({(p, v): o for v, o in zip(values, resp.json()["offsets"], strict=True)})
    return acked


def _read(api: httpx.Client, stream: str, p: int) -> dict[str, int]:
    body = httpx.get(
        f"{_leader_url(api, stream, p)}/v1/streams/{stream}/partitions/{p}/records",
        params={"offset": 0, "max_records": 10000, "encoding": "utf-8"},
        timeout=30,
    ).json()
    return {r["value"]: r["offset"] for r in body["records"]}


def test_a_new_broker_takes_replicas_and_a_retired_one_ends_empty(make_node, stream_name, tmp_path):
    nodes = {i: make_node(i, replica_lag_time_max_s=3.0) for i in (1, 2, 3)}
    api = httpx.Client(base_url=nodes[2].api_url, timeout=30)
    with api:
        create_stream(api, stream_name, partitions=PARTITIONS, replication_factor=2)
        acked = _publish(api, stream_name, "before")
        nodes[NEW_BROKER] = make_node(NEW_BROKER, replica_lag_time_max_s=3.0)
        wait_for(
            lambda: len(api.get("/v1/cluster").json()["brokers"]) == 4, 30, message="4 brokers"
        )
        plan = {
            "partitions": [
                {"partition": p["partition"], "replicas": [NEW_BROKER, p["replicas"][1]]}
                for p in _partitions(api, stream_name)
            ]
        }
        plan_file = tmp_path / "plan.json"
        plan_file.write_text(json.dumps(plan))
        server = str(api.base_url)
        _cli("stream", "reassign", stream_name, "--plan", str(plan_file), "--server", server)
        wait_for(lambda: _settled(api, stream_name), MOVE_TIMEOUT_S, message="moved onto 4")
        assert all(p["replicas"][0] == NEW_BROKER for p in _partitions(api, stream_name))
        acked |= _publish(api, stream_name, "joined")

        out = _cli("cluster", "decommission", str(RETIRED), "--server", server)
        assert "submitted" in out
        wait_for(lambda: _settled(api, stream_name), MOVE_TIMEOUT_S, message="moved off 1")
        final = _partitions(api, stream_name)
        assert all(RETIRED not in p["replicas"] and RETIRED not in p["isr"] for p in final)
        acked |= _publish(api, stream_name, "retired")
        retired_dir = Path(nodes[RETIRED].config.data_dir)
        wait_for(
            lambda: not list(retired_dir.glob(f"streams/{stream_name}@*/*")),
            30,
            message="the retired broker holds nothing",
        )
        logs = {p: _read(api, stream_name, p) for p in range(PARTITIONS)}
    for (p, value), offset in acked.items():
        assert logs[p].get(value) == offset, f"acked {value}@{offset} lost or moved"
