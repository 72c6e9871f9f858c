"""Requests that once got a 500 or cut a node off NATS, found by probing the API with values
far outside what a client sends: each is now a 422 naming the field, and the node stays ready."""

from __future__ import annotations

import pytest

from spark_log.stream_spec import MAX_SUBJECT_LENGTH
from tests.integration.conftest import create_stream

FAR = 10**30


@pytest.mark.parametrize("timestamp", [FAR, -FAR])
def test_fetch_timestamps_outside_int64_are_422(api, stream_name, timestamp):
    create_stream(api, stream_name)
    resp = api.get(
        f"/v1/streams/{stream_name}/partitions/0/records", params={"timestamp": timestamp}
    )
    assert resp.status_code == 422, resp.text
    assert "timestamp" in resp.json()["error"]["message"]


@pytest.mark.parametrize(
    "subject",
    ["a." + "x" * MAX_SUBJECT_LENGTH, "a.b\x00", "a.\x1b[31m"],
    ids=["longer-than-a-nats-control-line-allows", "nul", "escape"],
)
def test_subjects_nats_would_choke_on_are_refused_and_the_node_stays_ready(
    api, stream_name, subject
):
    resp = api.post("/v1/streams", json={"name": stream_name, "subject": subject})
    assert resp.status_code == 422, resp.text
    assert "subject" in resp.json()["error"]["message"]
    assert api.get("/readyz").status_code == 200  # still connected to NATS


@pytest.mark.parametrize(
    "field", ["retention_ms", "retention_bytes", "max_record_bytes", "delete_retention_ms"]
)
def test_spec_numbers_outside_int64_are_refused(api, stream_name, field):
    resp = api.post("/v1/streams", json={"name": stream_name, "subject": "a", field: FAR})
    assert resp.status_code == 422, resp.text
    assert field in resp.json()["error"]["message"]


def test_a_non_finite_compaction_interval_is_refused(api, stream_name):
    body = b'{"name": "%s", "subject": "a", "compaction": true, "compaction_interval_s": Infinity}'
    resp = api.post(
        "/v1/streams",
        content=body % stream_name.encode(),
        headers={"content-type": "application/json"},
    )
    assert resp.status_code == 422, resp.text
    assert "compaction_interval_s" in resp.json()["error"]["message"]
