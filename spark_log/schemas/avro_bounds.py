"""Refusing Avro schemas whose binary form lets a few bytes claim unbounded work.

An Avro array block starts with an item count; when the items encode in zero bytes (null, a
record with no non-empty fields, a fixed of size 0) that count is not bounded by the payload's
length, so a five-byte value could make a reader loop billions of times. Arrays of such items
carry no information a count field would not, so the schema is refused when registered.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spark_log.schemas.errors import InvalidSchemaError


def check_bounded(codec: Any, named: Mapping[str, Any]) -> None:
    """InvalidSchemaError if an array in the fastavro-parsed ``codec`` has zero-byte items."""
    _Walk(named).check(codec, set())


class _Walk:
    def __init__(self, named: Mapping[str, Any]) -> None:
        self._named = named

    def check(self, schema: Any, seen: set[str]) -> None:
        if isinstance(schema, list):
            for branch in schema:
                self.check(branch, seen)
            return
        if isinstance(schema, str):
            if schema in self._named and schema not in seen:
                self.check(self._named[schema], seen | {schema})
            return
        kind = schema["type"]
        if kind == "array":
            if self.zero_width(schema["items"], set()):
                raise InvalidSchemaError(
                    "invalid Avro schema: an array's items encode in zero bytes (null, an empty"
                    " record or a fixed of size 0), so its length would be unbounded"
                )
            self.check(schema["items"], seen)
        elif kind == "map":
            self.check(schema["values"], seen)
        elif kind in ("record", "error"):
            inner = seen | {schema["name"]}
            for field in schema["fields"]:
                self.check(field["type"], inner)
        elif not isinstance(kind, str) or kind in self._named:
            self.check(kind, seen)

    def zero_width(self, schema: Any, seen: set[str]) -> bool:
        if isinstance(schema, list):
            return False
        if isinstance(schema, str):
            if schema in self._named:
                return schema not in seen and self.zero_width(self._named[schema], seen | {schema})
            return schema == "null"
        kind = schema["type"]
        if kind in ("record", "error"):
            inner = seen | {schema["name"]}
            return all(self.zero_width(field["type"], inner) for field in schema["fields"])
        if kind == "fixed":
            return bool(schema["size"] == 0)
        if not isinstance(kind, str) or kind in self._named:
            return self.zero_width(kind, seen)
        return bool(kind == "null")
