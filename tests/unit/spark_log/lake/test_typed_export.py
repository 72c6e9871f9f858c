"""A bound stream's lake rows as typed rows, committed to a real Delta table (delta-rs on
local files): framed and plain values decoded, tombstones and undecodable values kept, a new
schema version's columns merged in the same commit, a change the table cannot follow refused
with nothing written."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from spark_log.lake import LAKE_SCHEMA, LakeTable
from spark_log.lake.typed_export import typed_rows, untyped_rows
from spark_log.lake.typed_layout import TYPED_BASE_SCHEMA
from spark_log.schemas import frame, parse_schema
from spark_log.schemas.errors import SchemaNotFoundError
from spark_log.schemas.layout_errors import IncompatibleLayoutError
from spark_log.schemas.parsed import ParsedSchema

SUBJECT = "orders-value"
V1 = {
    "type": "record",
    "name": "Order",
    "fields": [{"name": "id", "type": "long"}, {"name": "offset", "type": "string"}],
}
V2 = {
    **V1,
    "fields": [*V1["fields"], {"name": "note", "type": ["null", "string"], "default": None}],
}
DOUBLE_ID = {**V1, "fields": [{"name": "id", "type": "double"}, V1["fields"][1]]}


@dataclass(frozen=True)
class Loaded:
    parsed: ParsedSchema


class Registry:
    """The registry's lookups over a dict: ids to (subject, schema)."""

    def __init__(self) -> None:
        self.schemas: dict[int, tuple[str, ParsedSchema]] = {}

    def add(self, schema_id: int, document: object, schema_type="AVRO", subject=SUBJECT):
        self.schemas[schema_id] = (subject, parse_schema(schema_type, json.dumps(document)))
        return self.schemas[schema_id][1]

    def loaded(self, schema_id: int) -> Loaded:
        if schema_id not in self.schemas:
            raise SchemaNotFoundError("Schema not found")
        return Loaded(self.schemas[schema_id][1])

    def latest_id(self, subject: str) -> int | None:
        ids = [i for i, (s, _) in self.schemas.items() if s == subject]
        return max(ids) if ids else None

    def registered_under(self, subject: str, schema_id: int) -> bool:
        return self.schemas.get(schema_id, ("",))[0] == subject


def lake_rows(values: list[bytes], start: int = 0) -> pa.Table:
    n = len(values)
    return pa.table(
        {
            "partition": pa.array([0] * n, pa.int32()),
            "offset": pa.array(range(start, start + n), pa.int64()),
            "timestamp": pa.array([1_700_000_000_000_000] * n, pa.timestamp("us", tz="UTC")),
            "key": pa.array([None] * n, pa.binary()),
            "value": pa.array(values, pa.binary()),
            "headers": pa.nulls(n, LAKE_SCHEMA.field("headers").type),
            "subject": pa.array(["s"] * n, pa.string()),
        },
        schema=LAKE_SCHEMA,
    )


def commit(table: LakeTable, values: list[bytes], registry: Registry, start: int = 0):
    snapshot = table.snapshot()
    rows = typed_rows(lake_rows(values, start), snapshot.arrow_schema(), SUBJECT, False, registry)
    snapshot.append(
        rows.table, 0, start + len(values), lambda: True, {}, merge_schema=rows.merge_schema
    )
    return rows


def read(table: LakeTable) -> list[dict]:
    return DeltaTable(table.uri).to_pyarrow_table().sort_by("offset").to_pylist()


@pytest.fixture
def table(tmp_path) -> LakeTable:
    table = LakeTable(str(tmp_path / "orders@1"), "orders")
    table.ensure_exists(TYPED_BASE_SCHEMA)
    return table


def test_framed_plain_tombstone_and_undecodable_values(table):
    registry = Registry()
    v1 = registry.add(1, V1)
    registry.add(7, V1, subject="another-value")
    good = frame(1, v1.encode({"id": 1, "offset": "a"}))
    plain = json.dumps({"id": 2, "offset": "b"}).encode()
    values = [
        good,
        plain,
        b"",
        b"not json",
        frame(9, b"\x02"),
        frame(7, b"\x02\x00"),
        frame(1, b"\xff"),
    ]
    rows = commit(table, values, registry)
    assert rows.merge_schema

    got = read(table)
    assert [(r["id"], r["value_offset"], r["schema_id"]) for r in got] == [
        (1, "a", 1),
        (2, "b", 1),  # plain JSON: the subject's latest version at export
        (None, None, None),  # a tombstone
        *[(None, None, None)] * 4,
    ]
    assert [r["invalid_value"] for r in got] == [None, None, None, *values[3:]]
    assert "value" not in got[0]  # the raw value is not kept unless asked
    assert pa.schema(DeltaTable(table.uri).schema().to_arrow()).field("id").type == pa.int64()


def test_a_new_version_adds_its_column_in_the_same_commit(table):
    registry = Registry()
    v1 = registry.add(1, V1)
    commit(table, [frame(1, v1.encode({"id": 1, "offset": "a"}))], registry)
    v2 = registry.add(2, V2)
    values = [
        frame(2, v2.encode({"id": 2, "offset": "b", "note": "hi"})),
        frame(1, v1.encode({"id": 3, "offset": "c"})),
    ]
    rows = commit(table, values, registry, start=1)
    assert rows.merge_schema
    got = read(table)
    assert [(r["id"], r["note"], r["schema_id"]) for r in got] == [
        (1, None, 1),
        (2, "hi", 2),
        (3, None, 1),
    ]
    history = DeltaTable(table.uri).history()
    assert len(history) == 3  # create, and one commit per range: no rewrite


def test_a_change_the_table_cannot_follow_is_refused_and_nothing_is_written(table):
    registry = Registry()
    v1 = registry.add(1, V1)
    commit(table, [frame(1, v1.encode({"id": 1, "offset": "a"}))], registry)
    changed = registry.add(2, DOUBLE_ID)
    snapshot = table.snapshot()
    with pytest.raises(IncompatibleLayoutError, match=r"id.*int64.*double"):
        typed_rows(
            lake_rows([frame(2, changed.encode({"id": 1.5, "offset": "b"}))], 1),
            snapshot.arrow_schema(),
            SUBJECT,
            False,
            registry,
        )
    assert [r["offset"] for r in read(table)] == [0]


def test_a_json_value_whose_date_time_does_not_parse_is_kept_as_invalid(table):
    registry = Registry()
    document = {
        "type": "object",
        "properties": {"at": {"type": "string", "format": "date-time"}, "n": {"type": "integer"}},
    }
    registry.add(3, document, schema_type="JSON")
    values = [b'{"at": "2024-05-06T07:08:09Z", "n": 1}', b'{"at": "yesterday", "n": 2}']
    commit(table, values, registry)
    got = read(table)
    assert got[0]["n"] == 1 and got[0]["at"].year == 2024
    assert (got[1]["n"], got[1]["schema_id"], got[1]["invalid_value"]) == (None, None, values[1])


def test_an_unbound_streams_rows_fill_a_typed_table(table):
    registry = Registry()
    v1 = registry.add(1, V1)
    commit(table, [frame(1, v1.encode({"id": 1, "offset": "a"}))], registry)
    snapshot = table.snapshot()
    rows = untyped_rows(lake_rows([b"raw"], 1), snapshot.arrow_schema())
    assert rows.merge_schema  # the raw value column comes back
    snapshot.append(rows.table, 0, 2, lambda: True, {}, merge_schema=rows.merge_schema)
    got = read(table)
    assert [(r["id"], r["value"]) for r in got] == [(1, None), (None, b"raw")]


def test_an_unbound_streams_rows_go_as_they_are_to_a_lake_schema_table():
    rows = lake_rows([b"x"])
    assert untyped_rows(rows, LAKE_SCHEMA).table is rows
