"""A JSON Schema document as a column layout.

JSON Schema describes what a value may be, not one shape it has, so only the plain cases get
typed columns: objects with declared ``properties``, arrays, strings, numbers, booleans and
string enums, each possibly nullable. Every other schema (``oneOf``/``anyOf`` of several
shapes, an object without ``properties`` used as an open map, a schema we do not know) gives
a string column holding the value's JSON text: a value we cannot type is kept, never dropped.
Properties a value has beyond the declared ones have no column (the raw value keeps them).
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

from spark_log.json_types import JsonMapping, JsonValue
from spark_log.schemas.column_layout import (
    JSON_TEXT,
    ColumnKind,
    ColumnLayout,
    list_of,
    record,
)
from spark_log.schemas.layout_errors import UnsupportedSchemaError

_SCALARS: Mapping[str, pa.DataType] = {
    "integer": pa.int64(),
    "number": pa.float64(),
    "boolean": pa.bool_(),
    "null": pa.null(),
}

_STRING_FORMATS: Mapping[str, ColumnLayout] = {
    "date-time": ColumnLayout(pa.timestamp("us", tz="UTC"), ColumnKind.DATETIME_TEXT),
    "date": ColumnLayout(pa.date32(), ColumnKind.DATE_TEXT),
}


def json_schema_layout(document: JsonValue) -> ColumnLayout:
    """The layout of values valid against this JSON Schema."""
    return _JsonSchemaWalk(document).column(document, path="value")


class _JsonSchemaWalk:
    def __init__(self, root: JsonValue) -> None:
        self.root = root
        self.open: list[str] = []  # the $refs being laid out, outermost first

    def column(self, schema: JsonValue, path: str) -> ColumnLayout:
        if not isinstance(schema, dict):
            return JSON_TEXT  # true, false, or not a schema at all
        if isinstance(schema.get("$ref"), str):
            return self.reference(schema["$ref"], path)
        kind = schema.get("type")
        if isinstance(kind, list):
            return self.nullable(schema, kind, path)
        if kind is None:
            return self.untyped(schema, path)
        return self.typed(schema, kind, path)

    def reference(self, ref: str, path: str) -> ColumnLayout:
        """A ``$ref`` inside this document; one to another document is kept as JSON text."""
        if not ref.startswith("#"):
            return JSON_TEXT
        if ref in self.open:
            raise UnsupportedSchemaError(
                f"{path} refers to {ref} that contains it: a recursive schema has no typed columns"
            )
        self.open.append(ref)
        try:
            return self.column(_resolve(self.root, ref, path), path)
        finally:
            self.open.pop()

    def nullable(self, schema: JsonMapping, kinds: list[JsonValue], path: str) -> ColumnLayout:
        typed = [kind for kind in kinds if kind != "null"]
        if len(typed) != 1:
            return JSON_TEXT if typed else ColumnLayout(pa.null())
        return self.typed(schema, typed[0], path)

    def untyped(self, schema: JsonMapping, path: str) -> ColumnLayout:
        """No ``type``: the keywords present say what the value is, when they say one thing."""
        if "properties" in schema:
            return self.typed(schema, "object", path)
        if "items" in schema:
            return self.typed(schema, "array", path)
        if "enum" in schema:
            return _enum(schema["enum"])
        for keyword in ("oneOf", "anyOf"):
            branches = schema.get(keyword)
            if isinstance(branches, list):
                typed = [b for b in branches if not _is_null_schema(b)]
                return self.column(typed[0], path) if len(typed) == 1 else JSON_TEXT
        return JSON_TEXT

    def typed(self, schema: JsonMapping, kind: JsonValue, path: str) -> ColumnLayout:
        if kind == "object":
            return self.object(schema, path)
        if kind == "array":
            return self.array(schema, path)
        if kind == "string":
            if "enum" in schema:
                return _enum(schema["enum"])
            text_format = schema.get("format")
            if isinstance(text_format, str) and text_format in _STRING_FORMATS:
                return _STRING_FORMATS[text_format]
            return ColumnLayout(pa.string())
        if isinstance(kind, str) and kind in _SCALARS:
            return ColumnLayout(_SCALARS[kind])
        return JSON_TEXT

    def object(self, schema: JsonMapping, path: str) -> ColumnLayout:
        properties = schema.get("properties")
        if not isinstance(properties, dict) or not properties:
            return JSON_TEXT  # an open map: its keys are data, not columns
        required = schema.get("required")
        names = [n for n in required if isinstance(n, str)] if isinstance(required, list) else []
        return record(
            [(name, self.column(sub, f"{path}.{name}")) for name, sub in properties.items()],
            frozenset(names),
        )

    def array(self, schema: JsonMapping, path: str) -> ColumnLayout:
        items = schema.get("items", True)
        if isinstance(items, list) or "prefixItems" in schema:
            return JSON_TEXT  # a tuple: each position has its own type
        return list_of(self.column(items, f"{path}.element"))


def _enum(values: JsonValue) -> ColumnLayout:
    if isinstance(values, list) and all(isinstance(v, str) for v in values):
        return ColumnLayout(pa.string())
    return JSON_TEXT


def _is_null_schema(schema: JsonValue) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null"


def _resolve(root: JsonValue, ref: str, path: str) -> JsonValue:
    """A JSON Pointer fragment (``#/$defs/Name``, ``#/definitions/Name``, ``#``) in ``root``."""
    node = root
    for token in ref[1:].lstrip("/").split("/") if ref != "#" else []:
        key = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            raise UnsupportedSchemaError(f"{path}: $ref {ref} points nowhere in the schema")
    return node
