"""JSON Schema compatibility: the open and closed content models, types, enums and bounds."""

from __future__ import annotations

import json

import pytest

from spark_log.schemas import JsonSchema


def obj(
    properties: dict[str, object],
    required: list[str] | None = None,
    closed: bool = False,
    **extra: object,
) -> JsonSchema:
    document: dict[str, object] = {"type": "object", "properties": properties, **extra}
    if required:
        document["required"] = required
    if closed:
        document["additionalProperties"] = False
    return JsonSchema(json.dumps(document))


NUM = {"type": "number"}
INT = {"type": "integer"}
STR = {"type": "string"}


@pytest.mark.parametrize(
    ("reader", "writer", "problem"),
    [
        # open reader: a property the writer had and the reader dropped is still readable
        (obj({"a": STR}), obj({"a": STR, "b": NUM}), None),
        # closed reader: it is not
        (
            obj({"a": STR}, closed=True),
            obj({"a": STR, "b": NUM}, closed=True),
            "/properties/b: property removed from a closed content model",
        ),
        # closing an open model
        (
            obj({"a": STR}, closed=True),
            obj({"a": STR}),
            "/additionalProperties: the reader closes a content model the writer left open",
        ),
        # added optional property
        (obj({"a": STR, "b": NUM}), obj({"a": STR}), None),
        (obj({"a": STR, "b": NUM}, closed=True), obj({"a": STR}, closed=True), None),
        # required added: a problem unless the reader gives a default
        (
            obj({"a": STR, "b": NUM}, ["b"]),
            obj({"a": STR}),
            "/properties/b: required by the reader but absent from the writer",
        ),
        (
            obj({"a": STR, "b": NUM}, ["b"]),
            obj({"a": STR, "b": NUM}),
            "/properties/b: required by the reader but optional in the writer",
        ),
        (obj({"a": STR, "b": {"type": "number", "default": 0}}, ["b"]), obj({"a": STR}), None),
        (obj({"a": STR}), obj({"a": STR}, ["a"]), None),
        # type widening and narrowing
        (obj({"p": NUM}), obj({"p": INT}), None),
        (obj({"p": INT}), obj({"p": NUM}), "/properties/p: type changed from number to integer"),
        (obj({"p": {"type": ["string", "null"]}}), obj({"p": STR}), None),
        (
            obj({"p": STR}),
            obj({"p": {"type": ["string", "null"]}}),
            "type changed from [null, string] to string",
        ),
        (obj({"p": STR}), obj({"p": {}}), "type changed from any to string"),
        # enums
        (obj({"c": {"enum": ["r", "g", "b"]}}), obj({"c": {"enum": ["r", "g"]}}), None),
        (
            obj({"c": {"enum": ["r"]}}),
            obj({"c": {"enum": ["r", "g"]}}),
            '/properties/c: enum narrowed: ["g"] no longer allowed',
        ),
        # bounds
        (
            obj({"s": {"type": "string", "maxLength": 5}}),
            obj({"s": {"type": "string", "maxLength": 10}}),
            "/properties/s/maxLength: narrowed from 10 to 5",
        ),
        (
            obj({"s": {"type": "string", "maxLength": 10}}),
            obj({"s": {"type": "string", "maxLength": 5}}),
            None,
        ),
        (
            obj({"n": {"type": "number", "minimum": 1}}),
            obj({"n": NUM}),
            "/properties/n/minimum: narrowed from none to 1",
        ),
        (
            obj({"n": {"type": "number", "minimum": 1}}),
            obj({"n": {"type": "number", "minimum": 2}}),
            None,
        ),
        (
            obj({"n": {"type": "number", "multipleOf": 2}}),
            obj({"n": {"type": "number", "multipleOf": 4}}),
            None,
        ),
        (
            obj({"n": {"type": "number", "multipleOf": 4}}),
            obj({"n": {"type": "number", "multipleOf": 2}}),
            "multipleOf: narrowed",
        ),
        # arrays, recursively
        (
            obj({"xs": {"type": "array", "items": INT}}),
            obj({"xs": {"type": "array", "items": NUM}}),
            "/properties/xs/items: type changed from number to integer",
        ),
        (
            obj({"xs": {"type": "array", "items": NUM}}),
            obj({"xs": {"type": "array", "items": INT}}),
            None,
        ),
        # nested objects and local references
        (
            obj(
                {"o": {"$ref": "#/$defs/O"}},
                **{"$defs": {"O": {"type": "object", "properties": {"q": INT}}}},
            ),
            obj({"o": {"type": "object", "properties": {"q": NUM}}}),
            "/properties/o/properties/q: type changed from number to integer",
        ),
        # constraints only checked when unchanged
        (
            obj({"s": {"type": "string", "pattern": "^a"}}),
            obj({"s": STR}),
            "/properties/s/pattern: changed",
        ),
        (obj({"s": STR}), obj({"s": {"type": "string", "pattern": "^a"}}), None),
        # partially open reader: dropped properties must fit additionalProperties
        (
            obj({}, additionalProperties=STR),
            obj({"n": NUM}, closed=True),
            "/properties/n: type changed from number to string",
        ),
    ],
)
def test_reader_problems(reader: JsonSchema, writer: JsonSchema, problem: str | None) -> None:
    problems = reader.reader_problems(writer)
    if problem is None:
        assert problems == []
    else:
        assert any(problem in p for p in problems), problems


def test_boolean_schemas() -> None:
    anything, nothing = JsonSchema("true"), JsonSchema("false")
    assert anything.reader_problems(obj({"a": STR})) == []
    assert obj({"a": STR}).reader_problems(nothing) == []
    assert nothing.reader_problems(anything) == ["/: the reader accepts no value"]


def test_recursive_references_terminate() -> None:
    tree = {
        "type": "object",
        "properties": {"v": INT, "kids": {"type": "array", "items": {"$ref": "#"}}},
    }
    wider = {
        "type": "object",
        "properties": {"v": NUM, "kids": {"type": "array", "items": {"$ref": "#"}}},
    }
    assert JsonSchema(json.dumps(wider)).reader_problems(JsonSchema(json.dumps(tree))) == []
    assert JsonSchema(json.dumps(tree)).reader_problems(JsonSchema(json.dumps(wider)))
