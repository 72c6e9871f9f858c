"""Every node answers the same registry: a schema registered through one node is served by
the others within moments, and registrations racing through two nodes never share a
version number nor skip each other's compatibility check."""

from __future__ import annotations

import json
import uuid
from concurrent.futures import ThreadPoolExecutor

from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.integration.conftest import create_stream, node_client
from tests.support.confluent_registry import registry_client
from tests.support.waiting import wait_for


def _record(fields: int) -> Schema:
    """Each version adds an optional field: BACKWARD compatible with every earlier one."""
    document = {
        "type": "record",
        "name": "Event",
        "fields": [
            {"name": f"f{i}", "type": ["null", "long"], "default": None} for i in range(fields)
        ],
    }
    return Schema(json.dumps(document), "AVRO")


def test_a_schema_registered_through_one_node_is_served_by_the_other(make_node):
    first, second = make_node(1), make_node(2)
    subject = f"events-{uuid.uuid4().hex[:8]}-value"
    schema_id = registry_client(first.api_url).register_schema(subject, _record(1))
    other = registry_client(second.api_url)
    wait_for(lambda: subject in other.get_subjects(), 10, message="node 2 to know the subject")
    assert other.get_latest_version(subject).schema_id == schema_id
    assert other.get_schema(schema_id).schema_str == _record(1).schema_str
    registry_client(second.api_url).delete_subject(subject)
    wait_for(
        lambda: subject not in registry_client(first.api_url).get_subjects(),
        10,
        message="node 1 to see the deletion",
    )


def test_registrations_racing_through_two_nodes_get_distinct_versions(make_node):
    first, second = make_node(1), make_node(2)
    subject = f"race-{uuid.uuid4().hex[:8]}-value"
    urls = [first.api_url, second.api_url]

    def register(fields: int) -> int:
        return registry_client(urls[fields % 2]).register_schema(subject, _record(fields))

    with ThreadPoolExecutor(4) as pool:
        ids = list(pool.map(register, range(1, 9)))
    assert len(set(ids)) == 8  # eight different schemas: eight ids
    versions = registry_client(first.api_url).get_versions(subject)
    assert versions == list(range(1, 9))
    found = {registry_client(first.api_url).get_version(subject, v).schema_id for v in versions}
    assert found == set(ids)


async def test_a_leader_accepts_an_id_registered_through_another_node_at_once(make_node, nc):
    first, second = make_node(1), make_node(2)
    name = f"fresh-{uuid.uuid4().hex[:8]}"
    with node_client(first.api_url) as api:
        created = create_stream(api, name, value_schema={"format": "avro"})
    leader = created["partitions"][0]["leader"]
    elsewhere = second.api_url if leader == 1 else first.api_url
    serializer = AvroSerializer(registry_client(elsewhere), _record(2).schema_str)
    framed = serializer({"f0": 1, "f1": None}, SerializationContext(name, MessageField.VALUE))
    ack = json.loads((await nc.request(f"{name}.in", framed, timeout=10)).data)
    assert ack.get("offset") == 0, ack
