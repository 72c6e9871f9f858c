"""``liftlog schema register|check`` tell a JSON Schema from an Avro schema without --type."""

from __future__ import annotations

import json

import pytest

from liftlog.cli.schema import guess_type

AVRO_RECORD = {"type": "record", "name": "R", "fields": [{"name": "id", "type": "string"}]}


@pytest.mark.parametrize(
    ("document", "kind"),
    [
        (AVRO_RECORD, "AVRO"),
        ({"$schema": "http://json-schema.org/draft-07/schema#"}, "JSON"),
        ({"properties": {"id": {"type": "string"}}}, "JSON"),
        ({"type": "object", "additionalProperties": False}, "JSON"),
        ("string", "AVRO"),
        (["null", "string"], "AVRO"),
        ({**AVRO_RECORD, "properties": {}}, "AVRO"),  # Avro's fields win
    ],
)
def test_the_schema_type_is_guessed_from_the_document(document: object, kind: str) -> None:
    assert guess_type(json.dumps(document)) == kind


def test_text_that_is_not_json_is_left_to_the_registry_as_avro() -> None:
    assert guess_type("not json") == "AVRO"
