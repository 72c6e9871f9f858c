"""The identity text of an Avro schema: Avro's Parsing Canonical Form, plus what compatibility
and typed columns depend on.

Parsing Canonical Form resolves every name to its full name, drops namespaces, docs and
custom properties, writes each named type once (later uses by name), orders the keys
name, type, fields, symbols, items, values, size and removes whitespace. We also keep
``logicalType``, ``precision`` and ``scale`` (they change the value's meaning), ``default``
(field and enum defaults decide compatibility) and ``aliases`` (they decide name matching),
in that order after the standard keys.
"""

from __future__ import annotations

import json
from typing import Any

_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
_NAMED = {"record", "error", "enum", "fixed"}
_BUILT_IN = _PRIMITIVES | _NAMED | {"array", "map"}
_ORDER = (
    "name",
    "type",
    "fields",
    "symbols",
    "items",
    "values",
    "size",
    "logicalType",
    "precision",
    "scale",
    "default",
    "aliases",
)


def canonical_text(document: object) -> str:
    """The canonical text of a valid Avro schema document."""
    form = _Canonical().node(document, "")
    return json.dumps(form, separators=(",", ":"))


def _full_name(name: str, namespace: str) -> str:
    if "." in name or not namespace:
        return name
    return f"{namespace}.{name}"


def _sorted_value(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _sorted_value(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted_value(item) for item in value]
    return value


class _Canonical:
    def __init__(self) -> None:
        self._seen: set[str] = set()

    def node(self, schema: Any, namespace: str) -> Any:
        if isinstance(schema, list):
            return [self.node(branch, namespace) for branch in schema]
        if isinstance(schema, str):
            return schema if schema in _PRIMITIVES else _full_name(schema, namespace)
        kind = schema["type"]
        if not isinstance(kind, str) or kind not in _BUILT_IN:
            if set(schema) - {"type"}:
                return self._with_type(schema, self.node(kind, namespace))
            return self.node(kind, namespace)
        if kind in _NAMED:
            return self._named(schema, kind, namespace)
        return self._complex_or_primitive(schema, kind, namespace)

    def _with_type(self, schema: dict[str, Any], kind: Any) -> Any:
        kept = {key: schema[key] for key in ("logicalType", "precision", "scale") if key in schema}
        return {"type": kind, **kept} if kept else kind

    def _complex_or_primitive(self, schema: dict[str, Any], kind: str, namespace: str) -> Any:
        form: dict[str, Any] = {"type": kind}
        if kind == "array":
            form["items"] = self.node(schema["items"], namespace)
        elif kind == "map":
            form["values"] = self.node(schema["values"], namespace)
        for key in ("logicalType", "precision", "scale"):
            if key in schema:
                form[key] = schema[key]
        return form if len(form) > 1 else kind

    def _named(self, schema: dict[str, Any], kind: str, namespace: str) -> Any:
        name = schema["name"]
        own_namespace = schema.get("namespace", namespace) if "." not in name else ""
        full = _full_name(name, own_namespace or "")
        if full in self._seen:
            return full
        self._seen.add(full)
        inner = full.rpartition(".")[0]
        form: dict[str, Any] = {"name": full, "type": "record" if kind == "error" else kind}
        if kind in ("record", "error"):
            form["fields"] = [self._field(field, inner) for field in schema["fields"]]
        elif kind == "enum":
            form["symbols"] = list(schema["symbols"])
        else:
            form["size"] = schema["size"]
        for key in ("logicalType", "precision", "scale", "default"):
            if key in schema:
                form[key] = _sorted_value(schema[key])
        if schema.get("aliases"):
            form["aliases"] = sorted(_full_name(alias, inner) for alias in schema["aliases"])
        return {key: form[key] for key in _ORDER if key in form}

    def _field(self, field: dict[str, Any], namespace: str) -> dict[str, Any]:
        form: dict[str, Any] = {"name": field["name"], "type": self.node(field["type"], namespace)}
        if "default" in field:
            form["default"] = _sorted_value(field["default"])
        if field.get("aliases"):
            form["aliases"] = sorted(field["aliases"])
        return form
