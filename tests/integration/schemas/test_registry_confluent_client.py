"""The registry driven by Confluent's own Python client, unchanged: every route it calls,
its Avro and JSON serializers and deserializers, and Confluent's error codes."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.support.confluent_registry import registry_client

ORDER_V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "qty", "type": "int"},
    ],
}
ORDER_V2 = {  # BACKWARD compatible: a new field with a default
    **ORDER_V1,
    "fields": [*ORDER_V1["fields"], {"name": "note", "type": ["null", "string"], "default": None}],
}
ORDER_BAD = {  # not BACKWARD compatible: a new field without a default
    **ORDER_V1,
    "fields": [*ORDER_V1["fields"], {"name": "price", "type": "double"}],
}


def avro(document: dict[str, Any]) -> Schema:
    return Schema(json.dumps(document), "AVRO")


@pytest.fixture
def client(node: Any) -> Iterator[SchemaRegistryClient]:
    yield registry_client(node.api_url)


@pytest.fixture
def subject() -> str:
    return f"orders-{uuid.uuid4().hex[:8]}-value"


def test_register_lookup_versions_and_ids(client: SchemaRegistryClient, subject: str) -> None:
    first = client.register_schema(subject, avro(ORDER_V1))
    assert client.register_schema(subject, avro(ORDER_V1)) == first  # same schema, same id
    second = client.register_schema(subject, avro(ORDER_V2))
    assert second > first
    assert subject in client.get_subjects()
    assert client.get_versions(subject) == [1, 2]
    latest = client.get_latest_version(subject)
    assert (latest.version, latest.schema_id) == (2, second)
    assert json.loads(latest.schema.schema_str)["fields"][-1]["name"] == "note"
    assert client.get_version(subject, 1).schema_id == first
    assert client.get_schema(first).schema_type == "AVRO"
    found = client.lookup_schema(subject, avro(ORDER_V2))
    assert (found.version, found.schema_id) == (2, second)
    assert "AVRO" in client.get_schema_types()


def test_identical_schemas_share_an_id_across_subjects(
    client: SchemaRegistryClient, subject: str
) -> None:
    other = f"{subject}-other"
    assert client.register_schema(subject, avro(ORDER_V1)) == client.register_schema(
        other, avro(ORDER_V1)
    )


def test_an_incompatible_schema_is_refused_with_409_and_the_reason(
    client: SchemaRegistryClient, subject: str
) -> None:
    client.register_schema(subject, avro(ORDER_V1))
    assert client.test_compatibility(subject, avro(ORDER_V2)) is True
    assert client.test_compatibility(subject, avro(ORDER_BAD)) is False
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema(subject, avro(ORDER_BAD))
    assert refused.value.http_status_code == 409
    assert "price" in refused.value.error_message
    assert client.get_versions(subject) == [1]


def test_compatibility_levels_global_and_per_subject(
    client: SchemaRegistryClient, subject: str
) -> None:
    client.register_schema(subject, avro(ORDER_V1))
    assert client.get_compatibility() == "BACKWARD"
    client.set_compatibility(subject, "NONE")
    assert client.get_compatibility(subject) == "NONE"
    client.register_schema(subject, avro(ORDER_BAD))  # NONE checks nothing
    assert client.get_versions(subject) == [1, 2]
    client.delete_config(subject)
    with pytest.raises(SchemaRegistryError) as unset:
        client.get_compatibility(subject)
    assert unset.value.error_code == 40408
    with pytest.raises(SchemaRegistryError) as bad_level:
        client.set_compatibility(subject, "SIDEWAYS")
    assert bad_level.value.error_code == 42203


def test_soft_then_permanent_delete(client: SchemaRegistryClient, subject: str) -> None:
    first = client.register_schema(subject, avro(ORDER_V1))
    client.register_schema(subject, avro(ORDER_V2))
    assert client.delete_version(subject, 1) == 1
    assert client.get_versions(subject) == [2]
    with pytest.raises(SchemaRegistryError) as gone:
        client.get_version(subject, 1)
    assert gone.value.error_code == 40402
    with pytest.raises(SchemaRegistryError) as twice:
        client.delete_version(subject, 1)
    assert twice.value.error_code == 40406
    with pytest.raises(SchemaRegistryError) as not_soft:
        client.delete_subject(subject, permanent=True)
    assert not_soft.value.error_code == 40405
    assert client.delete_subject(subject) == [2]
    assert subject not in client.get_subjects()
    with pytest.raises(SchemaRegistryError) as missing:
        client.get_versions(subject)
    assert missing.value.error_code == 40401
    assert client.delete_subject(subject, permanent=True) == [1, 2]
    assert client.get_schema(first).schema_str  # ids outlive their subjects


def test_errors_use_confluent_codes(client: SchemaRegistryClient, subject: str) -> None:
    with pytest.raises(SchemaRegistryError) as no_subject:
        client.get_latest_version(subject)
    assert (no_subject.value.http_status_code, no_subject.value.error_code) == (404, 40401)
    with pytest.raises(SchemaRegistryError) as no_schema:
        client.get_schema(987654)
    assert no_schema.value.error_code == 40403
    with pytest.raises(SchemaRegistryError) as invalid:
        client.register_schema(subject, Schema('{"type": "recrd"}', "AVRO"))
    assert (invalid.value.http_status_code, invalid.value.error_code) == (422, 42201)
    client.register_schema(subject, avro(ORDER_V1))
    with pytest.raises(SchemaRegistryError) as no_version:
        client.get_version(subject, 7)
    assert no_version.value.error_code == 40402
    with pytest.raises(SchemaRegistryError) as lookup:
        client.lookup_schema(subject, avro(ORDER_V2))
    assert lookup.value.error_code == 40403


def test_avro_serializer_and_deserializer_round_trip(
    client: SchemaRegistryClient, subject: str
) -> None:
    topic = subject.removesuffix("-value")
    serializer = AvroSerializer(client, json.dumps(ORDER_V1))
    deserializer = AvroDeserializer(client)
    context = SerializationContext(topic, MessageField.VALUE)
    framed = serializer({"id": "o-1", "qty": 3}, context)
    assert framed is not None and framed[0] == 0
    assert client.get_versions(subject) == [1]  # auto-registered under <topic>-value
    assert deserializer(framed, context) == {"id": "o-1", "qty": 3}


def test_json_schema_serializer_and_deserializer_round_trip(
    client: SchemaRegistryClient, subject: str
) -> None:
    topic = subject.removesuffix("-value")
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Order",
        "type": "object",
        "properties": {"id": {"type": "string"}, "qty": {"type": "integer"}},
        "required": ["id"],
    }
    serializer = JSONSerializer(json.dumps(schema), client)
    deserializer = JSONDeserializer(json.dumps(schema), schema_registry_client=client)
    context = SerializationContext(topic, MessageField.VALUE)
    framed = serializer({"id": "o-2", "qty": 1}, context)
    assert deserializer(framed, context) == {"id": "o-2", "qty": 1}
    registered = client.get_latest_version(subject)
    assert registered.schema.schema_type == "JSON"
