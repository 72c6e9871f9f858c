"""The REST contract on a real node: typos refused (422 naming them), one error shape,
OpenAPI describing every response, and /docs served from local assets (no CDN)."""

from __future__ import annotations

import re

import pytest

from spark_log.api_models import ClusterInfo, StreamDescription, StreamList
from tests.integration.conftest import create_stream

PARTITION_FIELDS = {
    "partition",
    "leader",
    "leader_epoch",
    "replicas",
    "isr",
    "high_watermark",
    "log_end_offset",
    "log_start_offset",
    "lake_start_offset",
    "lake_offset",
    "offline",
}


def _assert_invalid(resp, *names: str) -> None:
    assert resp.status_code == 422, resp.text
    error = resp.json()["error"]
    assert error["code"] == "invalid_request"
    for name in names:
        assert name in error["message"], error["message"]


@pytest.mark.parametrize(
    ("method", "path", "typo"),
    [
        ("GET", "/v1/streams/{s}/partitions/0/records", "ofset"),
        ("POST", "/v1/streams/{s}/partitions/0/records", "acks"),
        ("GET", "/v1/streams", "limit"),
        ("GET", "/v1/streams/{s}", "verbose"),
        ("POST", "/v1/streams/{s}/pause", "now"),
        ("POST", "/v1/streams/{s}/flush", "wait"),
        ("DELETE", "/v1/streams/{s}", "force"),
        ("GET", "/v1/streams/{s}/partitions/0", "role"),
        ("POST", "/v1/streams/{s}/partitions/0/unclean-election", "confrim"),
        ("DELETE", "/v1/streams/{s}/reassign", "partiton"),
        ("GET", "/v1/cluster", "brokers"),
        ("GET", "/healthz", "deep"),
    ],
)
def test_unknown_query_parameters_are_422_naming_them(api, stream_name, method, path, typo):
    create_stream(api, stream_name)
    resp = api.request(
        method, path.format(s=stream_name), params={typo: "5"}, json={"records": [{"value": ""}]}
    )
    _assert_invalid(resp, typo)


def test_a_misspelt_offset_no_longer_reads_from_zero(api, stream_name):
    create_stream(api, stream_name)
    url = f"/v1/streams/{stream_name}/partitions/0/records"
    api.post(
        url, json={"records": [{"value": f"v{i}"} for i in range(6)]}, params={"encoding": "utf-8"}
    )
    _assert_invalid(api.get(url, params={"ofset": 5, "encoding": "utf-8"}), "ofset", "offset")
    right = api.get(url, params={"offset": 5, "encoding": "utf-8"})
    assert [r["value"] for r in right.json()["records"]] == ["v5"]


def test_routes_without_a_body_refuse_one_naming_its_fields(api, stream_name):
    create_stream(api, stream_name)
    _assert_invalid(
        api.request("DELETE", f"/v1/streams/{stream_name}", json={"force": True}), "force"
    )
    _assert_invalid(api.post(f"/v1/streams/{stream_name}/pause", content=b"now"), "takes no body")
    assert api.post(f"/v1/streams/{stream_name}/resume", json={}).status_code == 200
    assert api.get(f"/v1/streams/{stream_name}").status_code == 200  # still there


def test_unknown_body_fields_and_bad_values_are_422_naming_them(api, stream_name):
    _assert_invalid(
        api.post("/v1/streams", json={"name": stream_name, "subject": "a", "partitons": 2}),
        "partitons",
    )
    _assert_invalid(
        api.post("/v1/streams", json={"name": stream_name, "subject": "a", "partitions": "x"}),
        "partitions",
    )
    _assert_invalid(
        api.post("/v1/cluster/controlled-shutdown", json={"broker": 1}), "broker", "broker_id"
    )
    create_stream(api, stream_name)
    url = f"/v1/streams/{stream_name}/partitions/0/records"
    _assert_invalid(api.post(url, json={"records": [{"valu": "AA=="}]}), "valu")
    _assert_invalid(api.post(url, json={"record": []}), "record")
    _assert_invalid(api.post(url, content=b""))
    _assert_invalid(api.get(url, params={"offset": "abc"}), "offset")
    _assert_invalid(api.get(url, params={"encoding": "latin-1"}), "encoding")
    _assert_invalid(api.post(url, params={"ack_policy": "most"}, json={}), "ack_policy")


def test_publish_refusals_carry_their_code(api, stream_name):
    create_stream(api, stream_name)
    url = f"/v1/streams/{stream_name}/partitions/0/records"
    ok = api.post(url, json={"records": [{"value": "a"}]}, params={"encoding": "utf-8"})
    assert ok.json() == {
        "stream": stream_name,
        "partition": 0,
        "offsets": [0],
        "duplicate": False,
        "dead_letters": [],  # records a typed stream stored in its dead letter stream
    }
    assert api.post(f"/v1/streams/{stream_name}/pause").json()["paused"] is True
    paused = api.post(url, json={"records": [{"value": "b"}]}, params={"encoding": "utf-8"})
    assert paused.status_code == 409, paused.text
    assert paused.json()["error"]["code"] == "stream_paused"
    api.post(f"/v1/streams/{stream_name}/resume")
    again = api.post(url, json={"records": [{"value": "c"}]}, params={"encoding": "utf-8"})
    assert again.json()["offsets"] == [1]


def test_responses_parse_into_the_shared_models(api, stream_name):
    """Every key the node sends is a model field: nothing is dropped on the way through."""
    created = create_stream(api, stream_name, partitions=2)
    assert StreamDescription.from_json(created).to_json() == created
    assert set(created["partitions"][0]) >= PARTITION_FIELDS
    listed = api.get("/v1/streams").json()
    assert StreamList.from_json(listed).to_json() == listed
    cluster = api.get("/v1/cluster").json()
    assert ClusterInfo.from_json(cluster).to_json() == cluster


def test_a_reassignment_cancel_with_nothing_pending_is_a_typed_404(api, stream_name):
    create_stream(api, stream_name)
    url = f"/v1/streams/{stream_name}/reassign"
    for params, code in (
        ({}, "no_reassignment"),
        ({"partition": 0}, "no_reassignment"),
        ({"partition": 7}, "partition_not_found"),
    ):
        resp = api.delete(url, params=params)
        assert resp.status_code == 404, resp.text
        assert resp.json()["error"]["code"] == code
    missing = api.delete(f"/v1/streams/{stream_name}-missing/reassign")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "stream_not_found"


def test_openapi_describes_every_response_and_error(api):
    spec = api.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    for path, operations in spec["paths"].items():
        for method, op in operations.items():
            responses = op["responses"]
            ok = next(r for code, r in responses.items() if code.startswith("2"))
            if path != "/metrics":
                assert ok["content"]["application/json"]["schema"], (method, path)
            for code in ("422", "4XX", "5XX"):
                ref = responses[code]["content"]["application/json"]["schema"]["$ref"]
                assert ref.endswith("/ErrorBody"), (method, path, code)
    assert set(schemas["PartitionState"]["properties"]) >= PARTITION_FIELDS
    assert "duplicate" in schemas["PublishResult"]["properties"]
    assert set(schemas["ErrorDetail"]["properties"]) == {"code", "message"}
    assert "api_url" in schemas["BrokerInfo"]["properties"]
    assert "controller" in schemas["ClusterInfo"]["properties"]
    describe = spec["paths"]["/v1/streams/{stream}"]["get"]["responses"]["200"]
    assert describe["content"]["application/json"]["schema"]["$ref"].endswith("/StreamDescription")


def test_docs_use_only_local_swagger_assets(api):
    page = api.get("/docs")
    assert page.status_code == 200
    assert "SwaggerUIBundle" in page.text
    urls = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assets = [u for u in urls if u.endswith((".js", ".css", ".png"))]
    assert len(assets) >= 2, urls
    assert not [u for u in urls if u.startswith(("http:", "https:", "//"))], urls
    for url in assets:
        resp = api.get(url)
        assert resp.status_code == 200, url
        assert len(resp.content) > 100, url
    assert "/openapi.json" in page.text
