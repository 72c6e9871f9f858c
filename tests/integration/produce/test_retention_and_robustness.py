"""Retention through a real node, and garbage input that must never produce a 500."""

from __future__ import annotations

from spark_log.config import LakeConfig, LogConfig
from tests.integration.conftest import create_stream, fetch, node_client
from tests.support.waiting import wait_for


def test_retention_by_messages_removes_old_sealed_segments(make_node, stream_name):
    # without a lake, retention follows its limits alone (tests/integration/lake/test_lake_export.py
    # covers retention bounded by the lake)
    node = make_node(
        log=LogConfig(segment_bytes=2048, retention_check_interval_ms=100),
        lake=LakeConfig(enabled=False),
    )
    with node_client(node.api_url, timeout=30) as api:
        create_stream(api, stream_name, retention_messages=50)
        url = f"/v1/streams/{stream_name}/partitions/0/records"
        for i in range(40):
            body = {"records": [{"value": f"r{i}-{j}" + "x" * 40} for j in range(5)]}
            assert api.post(url, json=body, params={"encoding": "utf-8"}).status_code == 200

        def log_start() -> int:
            return api.get(f"/v1/streams/{stream_name}").json()["partitions"][0]["log_start_offset"]

        wait_for(lambda: log_start() > 0, 15, message="retention advanced the log start")
        start = log_start()
        assert 200 - start >= 50  # at least retention_messages records are kept
        assert api.get(url, params={"offset": 0}).status_code == 416
        kept = fetch(api, stream_name, offset=start, max_records=1000)["records"]
        assert kept[0]["offset"] == start and kept[-1]["offset"] == 199


GARBAGE_PATHS = [
    ("GET", "/v1/streams/%00", None),
    ("GET", "/v1/streams/x/partitions/abc/records", None),
    ("GET", "/v1/streams/x/partitions/0/records?offset=1e99", None),
    ("GET", "/v1/streams/x/partitions/0/records?max_records=0", None),
    ("GET", "/v1/streams/x/partitions/0/records?encoding=latin-1", None),
    ("POST", "/v1/streams", b"[]"),
    ("POST", "/v1/streams", b'{"name": 5, "subject": []}'),
    ("POST", "/v1/streams", b'{"name": "a", "subject": "b", "partitions": 100000}'),
    ("POST", "/v1/streams", b'{"name": "a", "subject": "b", "min_isr": 5}'),
    ("POST", "/v1/streams", b"\xff\xfe"),
    ("POST", "/v1/streams/x/partitions/0/records", b'{"records": "nope"}'),
    ("DELETE", "/v1/streams/..", None),
    ("POST", "/v1/streams/nope/pause", None),
]


def test_garbage_never_produces_a_server_error(api, stream_name):
    create_stream(api, stream_name)
    for method, path, body in GARBAGE_PATHS:
        for target in (path, path.replace("/x/", f"/{stream_name}/")):
            resp = api.request(
                method, target, content=body, headers={"content-type": "application/json"}
            )
            assert 400 <= resp.status_code < 500, (method, target, resp.status_code, resp.text)
            assert "error" in resp.json(), resp.text
