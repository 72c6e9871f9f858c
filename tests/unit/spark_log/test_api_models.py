"""The shared REST models: JSON in and out, unknown keys tolerated, attribute reads only."""

from __future__ import annotations

import dataclasses

import pytest

from spark_log.api_models import (
    Ack,
    ClusterInfo,
    ErrorBody,
    ErrorDetail,
    FetchResponse,
    StreamDescription,
    StreamSummary,
)
from spark_log.errors import InvalidRequestError
from spark_log.stream_spec import StreamSpec

DESCRIBE = {
    "name": "orders",
    "subject": "orders.in",
    "partitions": [
        {
            "partition": 1,
            "leader": 2,
            "leader_epoch": 3,
            "replicas": [2, 1],
            "isr": [2],
            "high_watermark": 10,
            "log_end_offset": 11,
            "log_start_offset": 0,
            "lake_start_offset": 0,
            "lake_offset": 4,
            "offline": False,
            "replica_log_end_offsets": {"2": 11},
            "a_newer_node_field": "ignored",
        }
    ],
    "spec": {"name": "orders", "subject": "orders.in", "partitions": 1},
    "paused": False,
    "created_at_ms": 7,
    "lake": {"uri": "file:///lake/orders@7"},
}


def test_describe_reads_nested_models_and_skips_unknown_keys():
    described = StreamDescription.from_json(DESCRIBE)
    part = described.partition(1)
    assert (part.leader, part.isr, part.lake_offset) == (2, (2,), 4)
    assert described.lake is not None and described.lake.uri.endswith("@7")
    assert described.spec.subject == "orders.in"
    with pytest.raises(KeyError):
        described.partition(0)


def test_to_json_writes_lists_and_nested_objects():
    body = StreamDescription.from_json(DESCRIBE).to_json()
    assert body["partitions"][0]["replicas"] == [2, 1]
    assert "a_newer_node_field" not in body["partitions"][0]
    assert body["lake"] == {
        "uri": "file:///lake/orders@7",
        "export_refused": None,
        "compacted_at_ms": None,
    }
    assert StreamDescription.from_json(body).to_json() == body


def test_models_are_read_by_attribute_only():
    """No dict-style reads: a hand-spelled key cannot creep back in place of a field."""
    described = StreamDescription.from_json(DESCRIBE)
    with pytest.raises(TypeError):
        described["partitions"]  # type: ignore[index]
    with pytest.raises(TypeError):
        "paused" in described  # type: ignore[operator]  # noqa: B015
    assert not hasattr(described, "get") and not hasattr(described, "keys")
    assert described.partitions[0].high_watermark == 10


def test_models_are_frozen():
    ack = Ack("s", 0, 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ack.offset = 2  # type: ignore[misc]


def test_ack_reads_count_and_duplicate_with_defaults():
    assert Ack.from_json({"stream": "s", "partition": 0, "offset": 3}) == Ack("s", 0, 3, 1, False)
    dup = Ack.from_json({"stream": "s", "partition": 0, "offset": 3, "count": 2, "duplicate": True})
    assert (dup.count, dup.duplicate) == (2, True)


def test_error_body_and_other_shapes_round_trip():
    body = {"error": {"code": "stream_paused", "message": "stream s is paused"}}
    assert ErrorBody.from_json(body) == ErrorBody(
        ErrorDetail("stream_paused", "stream s is paused")
    )
    assert ErrorBody.from_json(body).to_json() == body
    cluster = ClusterInfo.from_json(
        {
            "brokers": [{"broker_id": 1, "host": "h", "api_url": "http://h:1", "nats_url": "n"}],
            "controller": 1,
            "this_broker": 1,
        }
    )
    assert cluster.api_urls() == {1: "http://h:1"}
    fetched = FetchResponse.from_json(
        {"records": [{"offset": 0, "timestamp": 1, "value": "dg=="}], "high_watermark": 1}
    )
    assert fetched.records[0].headers == {} and fetched.next_offset == 0


def test_bad_shapes_are_typed_errors():
    with pytest.raises(InvalidRequestError):
        StreamDescription.from_json(["not", "an", "object"])  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError, match="Ack"):
        Ack.from_json({"stream": "s"})  # partition and offset missing


def test_summary_and_describe_repeat_every_spec_field():
    """The node builds both by spreading the spec's fields (a describe keeps ``partitions`` as
    its per-partition list): a new spec field must get a place in both models."""
    spec_fields = {f.name for f in dataclasses.fields(StreamSpec)}
    assert spec_fields <= {f.name for f in dataclasses.fields(StreamSummary)}
    assert spec_fields - {"partitions"} <= {f.name for f in dataclasses.fields(StreamDescription)}


def test_a_newer_nodes_spec_fields_are_skipped_when_reading_a_response():
    """An older client against a newer node: one new spec field must not break describe (and
    with it every publish, which reads the spec)."""
    body = {**DESCRIBE, "spec": {**DESCRIBE["spec"], "a_newer_spec_field": 3}}
    described = StreamDescription.from_json(body)
    assert described.spec == StreamSpec(name="orders", subject="orders.in", partitions=1)


def test_a_spec_from_user_input_still_refuses_unknown_keys():
    with pytest.raises(InvalidRequestError, match="a_misspelt_key"):
        StreamSpec.from_json({"name": "orders", "subject": "orders.in", "a_misspelt_key": 1})


def test_rest_create_refuses_unknown_fields():
    from pydantic import ValidationError

    from ingest.api.models import StreamCreate

    with pytest.raises(ValidationError, match="a_misspelt_key"):
        StreamCreate.model_validate({"name": "o", "subject": "o.in", "a_misspelt_key": 1})
