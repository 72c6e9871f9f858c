"""Typed publish and decode through the Liftlog client on a real node: a dict published to a
bound stream is stored byte for byte as Confluent's serializers write it, decodes back with
``decode=True``, and a value the schema refuses fails before anything is sent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from spark_log.client import Client, SyncClient
from spark_log.client.decoded import DecodedRecord
from spark_log.errors import InvalidRequestError
from spark_log.schemas import SchemaViolationError, unframe
from tests.integration.conftest import create_stream
from tests.support.confluent_registry import registry_client

ORDER_AVRO = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "qty", "type": "int"},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
}
ORDER_JSON = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {"id": {"type": "string"}, "qty": {"type": "integer"}},
    "required": ["id", "qty"],
}
ORDER = {"id": "o-1", "qty": 3, "note": "gift"}


@dataclass
class Order:
    id: str
    qty: int
    note: str | None = None


@pytest.fixture
def client(node: Any) -> Iterator[SyncClient]:
    with SyncClient(node.api_url) as sync:
        yield sync


def _bound(api: httpx.Client, node: Any, stream: str, schema: dict[str, Any], kind: str) -> int:
    """A stream bound to ``<stream>-value``, which holds ``schema``; its id."""
    registry = registry_client(node.api_url)
    schema_id = registry.register_schema(f"{stream}-value", Schema(json.dumps(schema), kind))
    fmt = "avro" if kind == "AVRO" else "json"
    create_stream(api, stream, value_schema={"format": fmt})
    return schema_id


def _stored(client: SyncClient, stream: str, offset: int) -> bytes:
    return client.fetch(stream, 0, offset, max_records=1).records[0].value


def test_a_dict_is_stored_as_confluents_avro_serializer_writes_it(
    node: Any, api: httpx.Client, client: SyncClient, stream_name: str
) -> None:
    schema_id = _bound(api, node, stream_name, ORDER_AVRO, "AVRO")
    ack = client.publish(stream_name, ORDER)
    assert ack is not None
    stored = _stored(client, stream_name, ack.offset)
    confluent = AvroSerializer(
        registry_client(node.api_url),
        json.dumps(ORDER_AVRO),
        conf={"auto.register.schemas": False, "use.latest.version": True},
    )
    expected = confluent(ORDER, SerializationContext(stream_name, MessageField.VALUE))
    assert stored == expected
    assert unframe(stored) is not None and unframe(stored)[0] == schema_id  # type: ignore[index]


def test_a_dict_is_stored_as_confluents_json_serializer_writes_it(
    node: Any, api: httpx.Client, client: SyncClient, stream_name: str
) -> None:
    schema_id = _bound(api, node, stream_name, ORDER_JSON, "JSON")
    value = {"id": "o-2", "qty": 1}
    ack = client.publish(stream_name, value)
    assert ack is not None
    stored = _stored(client, stream_name, ack.offset)
    confluent = JSONSerializer(
        json.dumps(ORDER_JSON),
        registry_client(node.api_url),
        conf={"auto.register.schemas": False, "use.latest.version": True},
    )
    assert stored == confluent(value, SerializationContext(stream_name, MessageField.VALUE))
    assert unframe(stored) == (schema_id, b'{"id":"o-2","qty":1}')


def test_decode_round_trips_typed_confluent_and_plain_json_values(
    node: Any, api: httpx.Client, client: SyncClient, stream_name: str
) -> None:
    _bound(api, node, stream_name, ORDER_AVRO, "AVRO")
    client.publish(stream_name, Order("o-3", 2))  # a dataclass is a datum too
    confluent = AvroSerializer(registry_client(node.api_url), json.dumps(ORDER_AVRO))
    client.publish(
        stream_name, confluent(ORDER, SerializationContext(stream_name, MessageField.VALUE))
    )
    client.publish(stream_name, '{"id": "o-4", "qty": 5, "note": null}')  # text: unchanged
    records = list(client.subscribe(stream_name, stop_at_end=True, decode=True))
    assert all(isinstance(r, DecodedRecord) for r in records)
    assert [r.decoded for r in records] == [  # type: ignore[attr-defined]
        {"id": "o-3", "qty": 2, "note": None},
        ORDER,
        {"id": "o-4", "qty": 5, "note": None},
    ]
    plain = list(client.subscribe(stream_name, stop_at_end=True))
    assert [r.value for r in plain] == [r.value for r in records]
    assert not any(isinstance(r, DecodedRecord) for r in plain)


def test_a_refused_value_names_the_field_and_sends_nothing(
    node: Any, api: httpx.Client, client: SyncClient, stream_name: str
) -> None:
    _bound(api, node, stream_name, ORDER_AVRO, "AVRO")
    with pytest.raises(SchemaViolationError) as refused:
        client.publish(stream_name, {"id": "o-5", "qty": "three"})
    assert refused.value.field == "/qty"
    with pytest.raises(SchemaViolationError) as batch_refused:
        client.publish_batch(stream_name, [ORDER, {"id": "o-6"}])
    assert batch_refused.value.field == "/qty"
    assert client.fetch(stream_name, 0, 0).high_watermark == 0


def test_a_datum_to_an_unbound_stream_is_a_typed_error(
    api: httpx.Client, client: SyncClient, stream_name: str
) -> None:
    create_stream(api, stream_name)
    with pytest.raises(InvalidRequestError, match="has no value schema"):
        client.publish(stream_name, {"id": "o-7"})
    ack = client.publish(stream_name, b"\x00raw")  # bytes as ever
    assert ack is not None and _stored(client, stream_name, ack.offset) == b"\x00raw"
    assert client.decode_value(stream_name, b"\x00raw") == b"\x00raw"


async def test_the_async_client_publishes_typed_batches(
    node: Any, api: httpx.Client, stream_name: str
) -> None:
    _bound(api, node, stream_name, ORDER_JSON, "JSON")
    values = [{"id": f"o-{i}", "qty": i} for i in range(3)]
    async with Client(node.api_url) as client:
        ack = await client.publish_batch(stream_name, values)
        assert ack is not None and ack.count == 3
        decoded = [
            r.decoded  # type: ignore[attr-defined]
            async for r in client.subscribe(stream_name, stop_at_end=True, decode=True)
        ]
    assert decoded == values


async def test_a_group_member_decodes(node: Any, api: httpx.Client, stream_name: str) -> None:
    _bound(api, node, stream_name, ORDER_AVRO, "AVRO")
    async with Client(node.api_url) as client:
        await client.publish(stream_name, ORDER)
        consumer = client.consume(
            f"{stream_name}-group", [stream_name], auto_offset_reset="earliest", decode=True
        )
        async with consumer:
            record = await anext(aiter(consumer))
    assert record.decoded == ORDER
    assert unframe(record.value) is not None
