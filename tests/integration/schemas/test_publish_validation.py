"""The leader validates every record of a bound stream before it gets an offset, on every
publish path: NATS (Confluent-framed and plain JSON), REST, producer batches; an invalid
record is refused with ``schema_violation`` naming the field, and nothing of it is stored."""

from __future__ import annotations

import json
import struct
from typing import Any

import nats
import pytest
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from spark_log.client import Client
from spark_log.errors import SchemaViolationError
from tests.integration.conftest import create_stream, fetch, node_client
from tests.support.confluent_registry import registry_client
from tests.support.waiting import wait_for

ORDER = {
    "type": "record",
    "name": "Order",
    "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int"}],
}
OTHER = {"type": "record", "name": "Other", "fields": [{"name": "x", "type": "long"}]}


async def _request(nc: nats.NATS, subject: str, data: bytes, headers: Any = None) -> dict:
    msg = await nc.request(subject, data, timeout=10, headers=headers)
    return json.loads(msg.data)


def _bound_stream(node: Any, api: Any, name: str) -> AvroSerializer:
    """A stream bound to ``<name>-value`` with ORDER registered; its serializer."""
    create_stream(api, name, value_schema={"format": "avro"})
    client = registry_client(node.api_url)
    client.register_schema(f"{name}-value", Schema(json.dumps(ORDER), "AVRO"))
    return AvroSerializer(client, json.dumps(ORDER), conf={"auto.register.schemas": False})


def _framed(serializer: AvroSerializer, stream: str, value: dict) -> bytes:
    data = serializer(value, SerializationContext(stream, MessageField.VALUE))
    assert data is not None
    return data


async def test_nats_publishes_are_validated_and_refusals_name_the_field(node, api, nc, stream_name):
    serializer = _bound_stream(node, api, stream_name)
    subject = f"{stream_name}.in"
    good = _framed(serializer, stream_name, {"id": "o-1", "qty": 2})
    assert (await _request(nc, subject, good))["offset"] == 0
    assert (await _request(nc, subject, b'{"id": "o-2", "qty": 5}'))["offset"] == 1  # plain JSON
    refusals = {
        "wrong JSON type": b'{"id": "o-3", "qty": "two"}',
        "missing field": b'{"id": "o-4"}',
        "not JSON": b"hello",
        "truncated Avro": good[:-1],
        "unknown id": good[:1] + struct.pack(">I", 999_999) + good[5:],
    }
    for case, data in refusals.items():
        ack = await _request(nc, subject, data)
        assert ack.get("error", {}).get("code") == "schema_violation", (case, ack)
    wrong_type = (await _request(nc, subject, refusals["wrong JSON type"]))["error"]["message"]
    assert "/qty" in wrong_type
    assert "999999" in (await _request(nc, subject, refusals["unknown id"]))["error"]["message"]
    tombstone = await _request(nc, subject, b"", {"Liftlog-Key": "o-1"})
    assert tombstone["offset"] == 2  # a key's deletion carries no value to check
    assert fetch(api, stream_name)["high_watermark"] == 3


async def test_an_id_of_another_subject_is_refused(node, api, nc, stream_name):
    serializer = _bound_stream(node, api, stream_name)
    other = registry_client(node.api_url).register_schema(
        f"{stream_name}-other", Schema(json.dumps(OTHER), "AVRO")
    )
    good = _framed(serializer, stream_name, {"id": "o-1", "qty": 2})
    foreign = good[:1] + struct.pack(">I", other) + good[5:]
    ack = await _request(nc, f"{stream_name}.in", foreign)
    assert ack["error"]["code"] == "schema_violation"
    assert "not registered under subject" in ack["error"]["message"]
    assert fetch(api, stream_name)["high_watermark"] == 0


async def test_rest_and_batch_publishes_are_validated(node, api, stream_name):
    serializer = _bound_stream(node, api, stream_name)
    refused = api.post(
        f"/v1/streams/{stream_name}/partitions/0/records?encoding=utf-8",
        json={"records": [{"value": '{"id": 7, "qty": 1}'}]},
    )
    assert refused.status_code == 422
    assert refused.json()["error"]["code"] == "schema_violation"
    good = _framed(serializer, stream_name, {"id": "o-1", "qty": 2})
    async with Client(node.api_url) as client:
        with pytest.raises(SchemaViolationError) as batch:
            await client.publish_batch(stream_name, [good, good, b'{"id": "x"}'])
        assert "record 2 of the batch" in batch.value.message
        assert batch.value.field == "/qty"
        ack = await client.publish_batch(stream_name, [good, b'{"id": "o-2", "qty": 1}'])
        assert ack is not None and ack.offset == 0
    assert fetch(api, stream_name)["high_watermark"] == 2


async def test_an_unbound_stream_takes_any_bytes(api, nc, stream_name):
    create_stream(api, stream_name)
    assert (await _request(nc, f"{stream_name}.in", b"\x00\x00\x00\x00\x07 anything"))[
        "offset"
    ] == 0


async def test_binding_an_existing_stream_and_unbinding_it(node, api, nc, stream_name):
    create_stream(api, stream_name)
    registry_client(node.api_url).register_schema(
        f"{stream_name}-value", Schema(json.dumps(ORDER), "AVRO")
    )
    bound = api.patch(f"/v1/streams/{stream_name}", json={"value_schema": {"format": "avro"}})
    assert bound.status_code == 200, bound.text
    assert bound.json()["value_schema"]["subject"] == f"{stream_name}-value"

    async def refused() -> bool:
        ack = await _request(nc, f"{stream_name}.in", b"free text")
        return ack.get("error", {}).get("code") == "schema_violation"

    assert await refused()
    api.patch(f"/v1/streams/{stream_name}", json={"value_schema": None})
    assert not await refused()


def _dead_lettered_stream(node: Any, api: Any, name: str, dlq: str) -> None:
    create_stream(api, dlq)
    create_stream(
        api,
        name,
        value_schema={"format": "avro", "on_invalid": "dead_letter", "dead_letter_stream": dlq},
    )
    registry_client(node.api_url).register_schema(
        f"{name}-value", Schema(json.dumps(ORDER), "AVRO")
    )


async def test_invalid_records_go_to_the_dead_letter_stream_with_the_reason(
    node, api, nc, stream_name
):
    dlq = f"{stream_name}-dlq"
    _dead_lettered_stream(node, api, stream_name, dlq)
    ok = await _request(nc, f"{stream_name}.in", b'{"id": "o-1", "qty": 1}')
    assert ok["offset"] == 0
    ack = await _request(nc, f"{stream_name}.in", b'{"id": "o-2", "qty": "x"}', {"trace": "t1"})
    assert ack["stream"] == stream_name and ack["offset"] == -1
    dead = ack["dead_letter"]
    assert (dead["stream"], dead["partition"], dead["offset"]) == (dlq, 0, 0)
    assert "/qty" in dead["reason"]
    rest = api.post(
        f"/v1/streams/{stream_name}/partitions/0/records?encoding=utf-8",
        json={"records": [{"value": '{"id": "o-3", "qty": 3}'}, {"value": "nope", "key": "k"}]},
    )
    assert rest.status_code == 200, rest.text
    body = rest.json()
    assert body["offsets"] == [1, -1]
    assert [(d["index"], d["stream"], d["offset"]) for d in body["dead_letters"]] == [(1, dlq, 1)]
    async with Client(node.api_url) as client:
        acked = await client.publish(stream_name, b"[1, 2]")
        assert acked is not None and acked.offset == -1
        assert acked.dead_letter is not None and acked.dead_letter.offset == 2
    assert fetch(api, stream_name)["high_watermark"] == 2
    stored = fetch(api, dlq, offset=0)["records"]
    assert len(stored) == 3
    first = stored[0]["headers"]
    assert first["trace"] == "t1" and first["Liftlog-Dead-Letter-Of"] == f"{stream_name}/0"
    assert "/qty" in first["Liftlog-Schema-Violation"]


async def test_a_missing_dead_letter_stream_refuses_and_stores_nothing(node, api, nc, stream_name):
    create_stream(
        api,
        stream_name,
        value_schema={"on_invalid": "dead_letter", "dead_letter_stream": f"{stream_name}-gone"},
    )
    registry_client(node.api_url).register_schema(
        f"{stream_name}-value", Schema(json.dumps(ORDER), "AVRO")
    )
    ack = await _request(nc, f"{stream_name}.in", b"garbage")
    assert ack["error"]["code"] == "stream_not_found"
    assert fetch(api, stream_name)["high_watermark"] == 0


async def test_a_dead_letter_stream_led_by_another_node(make_node, stream_name):
    first, second = make_node(1), make_node(2)
    dlq = f"{stream_name}-dlq"
    with node_client(first.api_url) as api:
        _dead_lettered_stream(first, api, stream_name, dlq)
        moved = api.post(
            f"/v1/streams/{dlq}/reassign", json={"partitions": [{"partition": 0, "replicas": [2]}]}
        )
        assert moved.status_code in (200, 202), moved.text
        wait_for(
            lambda: api.get(f"/v1/streams/{dlq}").json()["partitions"][0]["leader"] == 2,
            30,
            message="the dead letter stream led by node 2",
        )
        leader = api.get(f"/v1/streams/{stream_name}").json()["partitions"][0]["leader"]
        url = first.api_url if leader == 1 else second.api_url
        with node_client(url) as on_leader:
            resp = on_leader.post(
                f"/v1/streams/{stream_name}/partitions/0/records?encoding=utf-8",
                json={"records": [{"value": "not an order"}]},
            )
        assert resp.status_code == 200, resp.text
        assert resp.json()["dead_letters"][0]["stream"] == dlq
    with node_client(second.api_url) as on_dlq_leader:
        assert fetch(on_dlq_leader, dlq)["high_watermark"] == 1
