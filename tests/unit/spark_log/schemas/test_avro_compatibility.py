"""Avro's resolution rules, as reader_problems reports them with their locations."""

from __future__ import annotations

import json

import pytest

from spark_log.schemas import AvroSchema, parse_schema


def record(*fields: dict[str, object], name: str = "User") -> AvroSchema:
    return AvroSchema(json.dumps({"type": "record", "name": name, "fields": list(fields)}))


def field(name: str, kind: object, **extra: object) -> dict[str, object]:
    return {"name": name, "type": kind, **extra}


def enum(*symbols: str, **extra: object) -> dict[str, object]:
    return {"type": "enum", "name": "Color", "symbols": list(symbols), **extra}


V1 = record(field("id", "long"), field("name", "string"))


@pytest.mark.parametrize(
    ("reader", "writer", "problem"),
    [
        # added field with a default: new reader reads old data (BACKWARD)
        (
            record(field("id", "long"), field("name", "string"), field("age", "int", default=0)),
            V1,
            None,
        ),
        # added field without a default: it cannot
        (
            record(field("id", "long"), field("name", "string"), field("age", "int")),
            V1,
            "/fields/2: reader field has no default and the writer has no such field (field 'age')",
        ),
        # removed field: old reader reads new data only if the field has a default (FORWARD)
        (V1, record(field("id", "long")), "/fields/1: reader field has no default"),
        (
            record(field("id", "long"), field("name", "string", default="")),
            record(field("id", "long")),
            None,
        ),
        # promotions
        (record(field("id", "long")), record(field("id", "int")), None),
        (record(field("id", "double")), record(field("id", "long")), None),
        (
            record(field("id", "int")),
            record(field("id", "long")),
            "/fields/0/type: reader type 'int' cannot read writer type 'long' (field 'id')",
        ),
        (record(field("id", "string")), record(field("id", "bytes")), None),
        (record(field("id", "bytes")), record(field("id", "string")), None),
        (record(field("id", "string")), record(field("id", "int")), "reader type 'string'"),
        # enums
        (
            record(field("c", enum("RED", "GREEN", "BLUE"))),
            record(field("c", enum("RED", "GREEN"))),
            None,
        ),
        (
            record(field("c", enum("RED"))),
            record(field("c", enum("RED", "GREEN"))),
            "/fields/0/type/symbols: reader enum Color lacks writer symbols GREEN",
        ),
        (
            record(field("c", enum("RED", default="RED"))),
            record(field("c", enum("RED", "GREEN"))),
            None,
        ),
        # unions
        (record(field("n", ["null", "string"])), record(field("n", "string")), None),
        (
            record(field("n", "string")),
            record(field("n", ["null", "string"])),
            "reader type 'string' cannot read writer type 'null'",
        ),
        (record(field("n", ["null", "long"])), record(field("n", ["null", "int"])), None),
        (
            record(field("n", ["null", "int"])),
            record(field("n", "string")),
            "has no branch that reads writer type 'string'",
        ),
        # names and aliases
        (
            record(field("id", "long"), name="Account"),
            record(field("id", "long")),
            "/name: reader name 'Account'",
        ),
        (
            AvroSchema(
                json.dumps(
                    {
                        "type": "record",
                        "name": "Account",
                        "aliases": ["User"],
                        "fields": [field("id", "long")],
                    }
                )
            ),
            record(field("id", "long")),
            None,
        ),
        (record(field("ident", "long", aliases=["id"])), record(field("id", "long")), None),
        # nested: the location goes down through arrays and records
        (
            record(
                field(
                    "xs",
                    {
                        "type": "array",
                        "items": {
                            "type": "record",
                            "name": "P",
                            "fields": [field("price", "float")],
                        },
                    },
                )
            ),
            record(
                field(
                    "xs",
                    {
                        "type": "array",
                        "items": {
                            "type": "record",
                            "name": "P",
                            "fields": [field("price", "double")],
                        },
                    },
                )
            ),
            "/fields/0/type/items/fields/0/type: reader type 'float' cannot read writer type"
            " 'double' (field 'price')",
        ),
    ],
)
def test_reader_problems(reader: AvroSchema, writer: AvroSchema, problem: str | None) -> None:
    problems = reader.reader_problems(writer)
    if problem is None:
        assert problems == []
    else:
        assert any(problem in p for p in problems), problems


def test_every_problem_is_reported_separately() -> None:
    reader = record(field("id", "int"), field("name", "bytes"), field("age", "int"))
    writer = record(field("id", "long"), field("name", "int"))
    problems = reader.reader_problems(writer)
    assert len(problems) == 3
    assert [p.split(":")[0] for p in problems] == ["/fields/0/type", "/fields/1/type", "/fields/2"]


def test_different_formats_are_a_problem() -> None:
    problems = V1.reader_problems(parse_schema("JSON", "{}"))
    assert problems == ["reader is AVRO, writer is JSON"]


def test_recursive_schemas_terminate() -> None:
    linked = {
        "type": "record",
        "name": "Node",
        "fields": [field("next", ["null", "Node"]), field("v", "int")],
    }
    wider = json.loads(json.dumps(linked))
    wider["fields"][1]["type"] = "long"
    assert AvroSchema(json.dumps(wider)).reader_problems(AvroSchema(json.dumps(linked))) == []
    problems = AvroSchema(json.dumps(linked)).reader_problems(AvroSchema(json.dumps(wider)))
    assert problems and "reader type 'int' cannot read writer type 'long'" in problems[0]
