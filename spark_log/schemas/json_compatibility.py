"""Whether a reader JSON Schema accepts every value a writer JSON Schema accepts.

Follows Confluent's rules for JSON Schema's open and closed content models, walking the two
schemas together (local ``$ref`` followed). Each row is a problem:

- type: the reader must allow every type the writer allows ("integer" is readable as
  "number", not the reverse; a reader ``type`` where the writer had none narrows).
- enum / const: every writer value must be in the reader's enum.
- bounds: a reader stricter than the writer (maxLength, maxItems, maxProperties, maximum,
  exclusiveMaximum smaller; the min- forms larger; a multipleOf the writer's is not a
  multiple of; uniqueItems added) — a bound the writer did not have counts as stricter.
- properties: a writer property absent from a closed reader (additionalProperties false),
  or not valid against a partially open reader's additionalProperties schema; a property the
  reader requires that the writer lacks or has optional, unless the reader gives it a default;
  a reader closing a content model the writer left open; each shared property, recursively.
- items: recursively for arrays.
- anything else that constrains (pattern, format, allOf/anyOf/oneOf/not, if/then/else,
  patternProperties, dependencies, remote ``$ref`` ...) must be unchanged in the reader.

A property the reader adds where the writer is fully open is accepted (like an Avro field with
a default): only its type decides, once data carrying it arrives.
"""

from __future__ import annotations

import decimal
import json
from typing import Any

_ANY: dict[str, Any] = {}
_MAX_REF_HOPS = 64
_UPPER = ("maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum")
_LOWER = ("minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum")
_UNCHANGED = (
    "pattern",
    "format",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "patternProperties",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "propertyNames",
    "contains",
    "prefixItems",
    "additionalItems",
    "unevaluatedProperties",
    "unevaluatedItems",
    "$ref",
)


def json_reader_problems(reader: object, writer: object) -> list[str]:
    """Why values valid against ``writer`` may be invalid against ``reader``."""
    return _Comparison(reader, writer).compare(reader, writer, "")


def _same(left: object, right: object) -> bool:
    return json.dumps(left, sort_keys=True) == json.dumps(right, sort_keys=True)


def _child(at: str, *parts: str) -> str:
    return at + "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in parts)


def _types(schema: dict[str, Any]) -> set[str] | None:
    kind = schema.get("type")
    if kind is None:
        return None
    return {kind} if isinstance(kind, str) else {str(k) for k in kind}


def _type_text(types: set[str] | None) -> str:
    if types is None:
        return "any"
    return next(iter(types)) if len(types) == 1 else "[" + ", ".join(sorted(types)) + "]"


def _number(schema: dict[str, Any], key: str) -> float | None:
    value = schema.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return None


class _Comparison:
    def __init__(self, reader_root: object, writer_root: object) -> None:
        self._roots = (reader_root, writer_root)
        self._visited: set[tuple[int, int]] = set()

    def compare(self, reader: object, writer: object, at: str) -> list[str]:
        reader = self._resolve(reader, self._roots[0])
        writer = self._resolve(writer, self._roots[1])
        if reader is True or writer is False:
            return []
        if reader is False:
            return [f"{at or '/'}: the reader accepts no value"]
        if not isinstance(reader, dict):
            return []
        writer = writer if isinstance(writer, dict) else _ANY
        pair = (id(reader), id(writer))
        if pair in self._visited:
            return []
        self._visited.add(pair)
        return [
            *self._type(reader, writer, at),
            *self._enum(reader, writer, at),
            *self._bounds(reader, writer, at),
            *self._unchanged(reader, writer, at),
            *self._object(reader, writer, at),
            *self._items(reader, writer, at),
        ]

    def _resolve(self, schema: object, root: object) -> object:
        for _ in range(_MAX_REF_HOPS):
            if not (isinstance(schema, dict) and str(schema.get("$ref", "")).startswith("#")):
                return schema
            target = _lookup(root, schema["$ref"])
            if target is None:
                return schema
            schema = target
        return schema

    def _type(self, reader: dict[str, Any], writer: dict[str, Any], at: str) -> list[str]:
        wanted, written = _types(reader), _types(writer)
        if wanted is None:
            return []
        lost = (
            {"any"}
            if written is None
            else {
                t
                for t in written
                if t not in wanted and not (t == "integer" and "number" in wanted)
            }
        )
        if not lost:
            return []
        return [f"{at or '/'}: type changed from {_type_text(written)} to {_type_text(wanted)}"]

    def _enum(self, reader: dict[str, Any], writer: dict[str, Any], at: str) -> list[str]:
        allowed = _values(reader)
        if allowed is None:
            return []
        written = _values(writer)
        if written is None:
            return [f"{at or '/'}: the reader restricts values to {json.dumps(allowed)}"]
        missing = [value for value in written if not any(_same(value, a) for a in allowed)]
        if not missing:
            return []
        return [f"{at or '/'}: enum narrowed: {json.dumps(missing)} no longer allowed"]

    def _bounds(self, reader: dict[str, Any], writer: dict[str, Any], at: str) -> list[str]:
        problems = []
        for key, stricter in [(k, _smaller) for k in _UPPER] + [(k, _larger) for k in _LOWER]:
            bound, before = _number(reader, key), _number(writer, key)
            if bound is not None and (before is None or stricter(bound, before)):
                was = "none" if before is None else before
                problems.append(f"{_child(at, key)}: narrowed from {was} to {bound}")
        step, before = _number(reader, "multipleOf"), _number(writer, "multipleOf")
        if step and (before is None or not _divides(step, before)):
            problems.append(f"{_child(at, 'multipleOf')}: narrowed from {before} to {step}")
        if reader.get("uniqueItems") is True and writer.get("uniqueItems") is not True:
            problems.append(f"{_child(at, 'uniqueItems')}: the reader requires unique items")
        return problems

    def _unchanged(self, reader: dict[str, Any], writer: dict[str, Any], at: str) -> list[str]:
        return [
            f"{_child(at, key)}: changed (only an unchanged {key} is known to be compatible)"
            for key in _UNCHANGED
            if key in reader and not _same(reader[key], writer.get(key))
        ]

    def _object(self, reader: dict[str, Any], writer: dict[str, Any], at: str) -> list[str]:
        wanted = reader.get("properties") or {}
        written = writer.get("properties") or {}
        more_wanted = reader.get("additionalProperties", True)
        more_written = writer.get("additionalProperties", True)
        problems: list[str] = []
        for name, schema in written.items():
            where = _child(at, "properties", name)
            if name in wanted:
                problems += self.compare(wanted[name], schema, where)
            elif more_wanted is False:
                problems.append(f"{where}: property removed from a closed content model")
            else:
                problems += self.compare(more_wanted, schema, where)
        for name, schema in wanted.items():
            if name not in written and isinstance(more_written, dict):
                problems += self.compare(schema, more_written, _child(at, "properties", name))
        problems += self._required(reader, writer, at)
        if more_wanted is False and more_written is not False:
            problems.append(
                f"{_child(at, 'additionalProperties')}: the reader closes a content model"
                " the writer left open"
            )
        elif isinstance(more_wanted, dict) and more_written is not False:
            problems += self.compare(more_wanted, more_written, _child(at, "additionalProperties"))
        return problems

    def _required(self, reader: dict[str, Any], writer: dict[str, Any], at: str) -> list[str]:
        wanted = reader.get("properties") or {}
        already = set(writer.get("required") or [])
        problems = []
        for name in reader.get("required") or []:
            schema = wanted.get(name)
            if name in already or (isinstance(schema, dict) and "default" in schema):
                continue
            state = "optional in" if name in (writer.get("properties") or {}) else "absent from"
            problems.append(
                f"{_child(at, 'properties', name)}: required by the reader but {state} the writer"
            )
        return problems

    def _items(self, reader: dict[str, Any], writer: dict[str, Any], at: str) -> list[str]:
        items = reader.get("items")
        if items is None:
            return []
        if isinstance(items, list):
            if _same(items, writer.get("items")):
                return []
            return [f"{_child(at, 'items')}: changed (only unchanged tuple items are checked)"]
        written = writer.get("items", True)
        if isinstance(written, list):
            return [
                problem
                for index, schema in enumerate(written)
                for problem in self.compare(items, schema, _child(at, "items", str(index)))
            ]
        return self.compare(items, written, _child(at, "items"))


def _values(schema: dict[str, Any]) -> list[Any] | None:
    if "const" in schema:
        return [schema["const"]]
    values = schema.get("enum")
    return list(values) if isinstance(values, list) else None


def _smaller(bound: float, before: float) -> bool:
    return bound < before


def _larger(bound: float, before: float) -> bool:
    return bound > before


def _divides(step: float, before: float) -> bool:
    remainder = decimal.Decimal(str(before)) % decimal.Decimal(str(step))
    return remainder == 0


def _lookup(root: object, ref: str) -> object | None:
    """The node a local reference ("#/$defs/Item") names in ``root``, or None."""
    node = root
    for raw in ref.lstrip("#").split("/")[1:] if ref != "#" else []:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node
