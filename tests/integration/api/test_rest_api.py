"""The REST API on a real node: streams admin, records (JSON and Arrow), errors, health."""

from __future__ import annotations

import base64
import os
import re
import threading
import time

import pyarrow as pa

from spark_log.client.client import encode_producer_batch
from tests.integration.conftest import create_stream, fetch
from tests.support.waiting import wait_for


def test_create_is_idempotent_and_conflicts_are_409(api, stream_name):
    body = {"name": stream_name, "subject": f"{stream_name}.in", "partitions": 2}
    first = api.post("/v1/streams", json=body)
    assert first.status_code == 201
    assert [p["partition"] for p in first.json()["partitions"]] == [0, 1]
    assert api.post("/v1/streams", json=body).status_code == 200
    conflict = api.post("/v1/streams", json={**body, "partitions": 3})
    assert conflict.status_code == 409
    assert conflict.json()["error"]["code"] == "stream_exists"
    assert "partitions" in conflict.json()["error"]["message"]


def test_bad_create_requests_get_clear_errors(api, stream_name):
    unknown = api.post("/v1/streams", json={"name": stream_name, "subject": "a", "partitons": 2})
    assert unknown.status_code == 422
    assert "partitons" in unknown.json()["error"]["message"]
    bad_subject = api.post("/v1/streams", json={"name": stream_name, "subject": "a..b"})
    assert bad_subject.status_code == 422
    assert bad_subject.json()["error"]["code"] == "invalid_request"
    bad_name = api.post("/v1/streams", json={"name": "no spaces", "subject": "a"})
    assert bad_name.status_code == 422
    too_many = api.post(
        "/v1/streams", json={"name": stream_name, "subject": "a", "replication_factor": 3}
    )
    assert too_many.status_code == 422
    assert "replication factor" in too_many.json()["error"]["message"]
    not_json = api.post(
        "/v1/streams", content=b"{nope", headers={"content-type": "application/json"}
    )
    assert not_json.status_code == 422
    assert api.get("/v1/streams").status_code == 200


def test_list_describe_delete_removes_data(api, node, stream_name):
    created = create_stream(api, stream_name)
    assert "lake_start_offset" in created["partitions"][0]
    assert created["partitions"][0] | {"high_watermark": 0, "lake_start_offset": None} == {
        "partition": 0,
        "leader": 1,
        "leader_epoch": 0,
        "replicas": [1],
        "isr": [1],
        "high_watermark": 0,
        "log_end_offset": 0,
        "log_start_offset": 0,
        "lake_start_offset": None,
        "lake_offset": 0,  # the lake is on by default; nothing exported yet
        "lake_compacted_offset": None,
        "offline": False,
        "storage_error": None,
        "lake_error": None,
        "replica_log_end_offsets": {"1": 0},
    }
    assert created["lake"]["uri"].endswith(f"/{stream_name}@{created['created_at_ms']}")
    api.post(
        f"/v1/streams/{stream_name}/partitions/0/records",
        json={"records": [{"value": "v"}]},
        params={"encoding": "utf-8"},
    )
    names = [s["name"] for s in api.get("/v1/streams").json()["streams"]]
    assert stream_name in names
    described = api.get(f"/v1/streams/{stream_name}").json()
    assert described["partitions"][0]["high_watermark"] == 1
    data_root = os.path.join(node.config.data_dir, "streams")
    assert any(d.startswith(f"{stream_name}@") for d in os.listdir(data_root))
    assert api.delete(f"/v1/streams/{stream_name}").status_code == 200
    assert not any(d.startswith(f"{stream_name}@") for d in os.listdir(data_root))
    missing = api.get(f"/v1/streams/{stream_name}")
    assert missing.status_code == 404
    assert missing.json() == {
        "error": {"code": "stream_not_found", "message": missing.json()["error"]["message"]}
    }
    assert api.delete(f"/v1/streams/{stream_name}").status_code == 404
    # a stream re-created with the same name starts empty
    create_stream(api, stream_name)
    assert fetch(api, stream_name)["high_watermark"] == 0


def test_publish_and_fetch_json_and_arrow(api, stream_name):
    create_stream(api, stream_name)
    resp = api.post(
        f"/v1/streams/{stream_name}/partitions/0/records",
        json={
            "records": [
                {
                    "key": base64.b64encode(b"k").decode(),
                    "value": base64.b64encode(b"\x00\x01").decode(),
                    "headers": {"h": "1"},
                },
                {"value": base64.b64encode(b"two").decode()},
            ]
        },
    )
    assert resp.status_code == 200, resp.text
    assert resp.json()["offsets"] == [0, 1]
    arrow_body = encode_producer_batch([b"a", b"b", b"c"], [b"x", None, b"z"])
    resp = api.post(
        f"/v1/streams/{stream_name}/partitions/0/records",
        content=arrow_body,
        headers={"content-type": "application/vnd.apache.arrow.stream"},
    )
    assert resp.json()["offsets"] == [2, 3, 4]
    body = api.get(f"/v1/streams/{stream_name}/partitions/0/records", params={"offset": 0}).json()
    assert base64.b64decode(body["records"][0]["value"]) == b"\x00\x01"
    assert base64.b64decode(body["records"][0]["key"]) == b"k"
    assert body["records"][0]["headers"]["h"] == "1"
    assert body["high_watermark"] == 5
    arrow = api.get(
        f"/v1/streams/{stream_name}/partitions/0/records",
        params={"offset": 2},
        headers={"accept": "application/vnd.apache.arrow.stream"},
    )
    table = pa.ipc.open_stream(arrow.content).read_all()
    assert table.column("offset").to_pylist() == [2, 3, 4]
    assert table.column("key").to_pylist() == [b"x", None, b"z"]
    assert arrow.headers["liftlog-high-watermark"] == "5"


def test_fetch_limits_timestamp_and_ranges(api, stream_name):
    create_stream(api, stream_name)
    url = f"/v1/streams/{stream_name}/partitions/0/records"
    api.post(
        url,
        json={"records": [{"value": f"early-{i}"} for i in range(5)]},
        params={"encoding": "utf-8"},
    )
    middle = int(time.time() * 1000) + 1
    wait_for(lambda: int(time.time() * 1000) > middle, 1)  # later appends get later timestamps
    api.post(
        url,
        json={"records": [{"value": f"late-{i}"} for i in range(5)]},
        params={"encoding": "utf-8"},
    )
    assert len(fetch(api, stream_name, offset=0, max_records=3)["records"]) == 3
    by_time = fetch(api, stream_name, timestamp=middle)["records"]
    assert by_time[0]["value"] == "late-0"
    small = fetch(api, stream_name, offset=0, max_bytes=1)["records"]
    assert len(small) >= 1  # always progress: at least one batch
    assert fetch(api, stream_name, offset=10)["records"] == []
    beyond = api.get(url, params={"offset": 11})
    assert beyond.status_code == 416
    assert beyond.json()["error"]["code"] == "offset_out_of_range"
    assert api.get(url, params={"offset": -1}).status_code == 422
    assert api.get(url, params={"offset": 0, "timestamp": 1}).status_code == 422
    assert api.get(f"/v1/streams/{stream_name}/partitions/7/records").status_code == 404
    assert api.get("/v1/streams/nope/partitions/0/records").status_code == 404


def test_long_poll_returns_when_a_record_arrives(api, stream_name):
    create_stream(api, stream_name)
    url = f"/v1/streams/{stream_name}/partitions/0/records"

    def publish_later() -> None:
        wait_for(lambda: _fetch_waiters(api) > 0, 10, message="a fetch is long-polling")
        api.post(url, json={"records": [{"value": "late"}]}, params={"encoding": "utf-8"})

    thread = threading.Thread(target=publish_later)
    thread.start()
    started = time.monotonic()
    body = fetch(api, stream_name, offset=0, wait_ms=10_000)
    thread.join()
    assert [r["value"] for r in body["records"]] == ["late"]
    assert time.monotonic() - started < 9
    empty = fetch(api, stream_name, offset=1, wait_ms=200)
    assert empty["records"] == []


def _fetch_waiters(api) -> float:
    text = api.get("/metrics").text
    return sum(float(v) for v in re.findall(r"^liftlog_fetch_waiters (\S+)$", text, re.M))


def test_publish_errors(api, stream_name):
    create_stream(api, stream_name, max_record_bytes=4)
    url = f"/v1/streams/{stream_name}/partitions/0/records"
    too_big = api.post(url, json={"records": [{"value": "12345"}]}, params={"encoding": "utf-8"})
    assert too_big.status_code == 413
    assert api.post(url, json={"records": [{"value": "!!"}]}).status_code == 422  # not base64
    assert api.post(url, json={"records": []}).status_code == 422
    assert (
        api.post(
            url, content=b"junk", headers={"content-type": "application/vnd.apache.arrow.stream"}
        ).status_code
        == 422
    )
    extra = api.post(url, json={"records": [{"value": "AA==", "extra": 1}]})
    assert extra.status_code == 422
    assert extra.json()["error"]["code"] == "invalid_request"
    assert "extra" in extra.json()["error"]["message"]
    assert fetch(api, stream_name)["high_watermark"] == 0


def test_health_openapi_cluster_metrics(api, node):
    assert api.get("/healthz").json() == {"status": "ok"}
    assert api.get("/readyz").status_code == 200
    spec = api.get("/openapi.json").json()
    assert "/v1/streams/{stream}/partitions/{partition}/records" in spec["paths"]
    cluster = api.get("/v1/cluster").json()
    assert cluster["brokers"][0]["api_url"] == node.api_url
    assert cluster["brokers"][0]["liftbridge_address"] == node.config.advertised_liftbridge_address
    assert "liftlog_records_appended_total" in api.get("/metrics").text
    assert api.get("/v1/nothing-here").json()["error"]["code"] == "not_found"
