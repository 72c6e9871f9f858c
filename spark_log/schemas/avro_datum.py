"""Checking a value against an Avro schema, with the path of the first value that fails.

fastavro's own validation names fields by record ("shop.Item.price"), not by where they sit
in the value, and accepts ints out of Avro's 32-bit range; this walk gives "/items/2/price" and
Avro's exact ranges. With ``from_json`` it also turns JSON-natural values into what the Avro
encoder needs: ISO-8601 text or epoch numbers for dates and timestamps, numbers or text for
decimals, and ISO-8859-1 text for bytes and fixed (Avro's JSON encoding).
"""

from __future__ import annotations

import datetime
import decimal
import uuid
from collections.abc import Mapping
from typing import Any

from spark_log.schemas.errors import SchemaViolationError
from spark_log.schemas.json_text import pointer

# A fastavro-parsed schema is a JSON document: a type name, a union list or a dict.
AvroNode = Any

_RANGES = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
_FLOAT_MAX = 3.4028234663852886e38
_TIMESTAMPS = {
    "timestamp-millis",
    "timestamp-micros",
    "timestamp-nanos",
    "local-timestamp-millis",
    "local-timestamp-micros",
    "local-timestamp-nanos",
}


def conform(
    schema: AvroNode, named: Mapping[str, AvroNode], value: object, *, from_json: bool
) -> object:
    """``value`` as the Avro encoder takes it; SchemaViolationError naming the field if it does
    not match ``schema`` (a fastavro-parsed schema whose named types are in ``named``)."""
    try:
        return _Conformer(named, from_json).value(schema, value, ())
    except RecursionError:
        raise SchemaViolationError("", "value is nested too deeply") from None


def _kind(value: object) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", float: "number"}
    if value is None:
        return "null"
    if type(value) is int:
        return "integer"
    return names.get(type(value), type(value).__name__)


class _Conformer:
    def __init__(self, named: Mapping[str, AvroNode], from_json: bool) -> None:
        self._named = named
        self._from_json = from_json

    def value(self, schema: AvroNode, value: object, path: tuple[str | int, ...]) -> object:
        if isinstance(schema, list):
            return self._union(schema, value, path)
        if isinstance(schema, str):
            schema = self._named.get(schema, {"type": schema})
        kind = schema["type"]
        if isinstance(kind, (dict, list)) or kind in self._named:
            return self.value(kind, value, path)
        logical = schema.get("logicalType")
        if logical is not None:
            converted = self._logical(schema, logical, value, path)
            if converted is not _NOT_LOGICAL:
                return converted
        return self._plain(schema, kind, value, path)

    def _plain(
        self, schema: dict[str, Any], kind: str, value: object, path: tuple[str | int, ...]
    ) -> object:
        if kind == "record" or kind == "error":
            return self._record(schema, value, path)
        if kind == "array":
            if not isinstance(value, (list, tuple)):
                raise _mismatch("array", value, path)
            items = schema["items"]
            return [self.value(items, item, (*path, i)) for i, item in enumerate(value)]
        if kind == "map":
            if not isinstance(value, Mapping):
                raise _mismatch("map", value, path)
            values = schema["values"]
            return {self._key(k, path): self.value(values, v, (*path, k)) for k, v in value.items()}
        if kind == "enum":
            if not isinstance(value, str) or value not in schema["symbols"]:
                raise SchemaViolationError(
                    pointer(path), f"{value!r} is not a symbol of enum {schema['name']}"
                )
            return value
        if kind == "fixed":
            data = self._bytes(value, path, "fixed")
            if len(data) != schema["size"]:
                raise SchemaViolationError(
                    pointer(path),
                    f"fixed {schema['name']} needs {schema['size']} bytes, got {len(data)}",
                )
            return data
        return self._primitive(kind, value, path)

    def _primitive(self, kind: str, value: object, path: tuple[str | int, ...]) -> object:
        if kind == "null":
            if value is not None:
                raise _mismatch("null", value, path)
            return None
        if kind == "boolean":
            if not isinstance(value, bool):
                raise _mismatch("boolean", value, path)
            return value
        if kind in _RANGES:
            return _integer(kind, value, path)
        if kind in ("float", "double"):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise _mismatch(kind, value, path)
            if kind == "float" and abs(value) > _FLOAT_MAX and abs(value) != float("inf"):
                raise SchemaViolationError(pointer(path), f"{value!r} is out of range for float")
            return value
        if kind == "string":
            if not isinstance(value, str):
                raise _mismatch("string", value, path)
            _check_utf8(value, path)
            return value
        if kind == "bytes":
            return self._bytes(value, path, "bytes")
        raise SchemaViolationError(pointer(path), f"unknown Avro type {kind!r}")

    def _record(self, schema: dict[str, Any], value: object, path: tuple[str | int, ...]) -> object:
        if not isinstance(value, Mapping):
            raise _mismatch(f"record {schema['name']}", value, path)
        fields = schema["fields"]
        names = {field["name"] for field in fields}
        for key in value:
            if key not in names:
                raise SchemaViolationError(
                    pointer((*path, str(key))), f"field is not in record {schema['name']}"
                )
        out: dict[str, object] = {}
        for field in fields:
            name = field["name"]
            where = (*path, name)
            if name in value:
                out[name] = self.value(field["type"], value[name], where)
            elif "default" in field:
                out[name] = _Conformer(self._named, True).value(
                    field["type"], field["default"], where
                )
            else:
                raise SchemaViolationError(pointer(where), "missing required field")
        return out

    def _union(self, branches: list[Any], value: object, path: tuple[str | int, ...]) -> object:
        failures: list[SchemaViolationError] = []
        for branch in branches:
            try:
                return self.value(branch, value, path)
            except SchemaViolationError as failure:
                failures.append(failure)
        deeper = [f for f in failures if len(f.field) > len(pointer(path))]
        if deeper:
            raise max(deeper, key=lambda f: len(f.field))
        names = ", ".join(_branch_name(branch) for branch in branches)
        raise SchemaViolationError(
            pointer(path), f"{_kind(value)} value matches no branch of union [{names}]"
        )

    def _key(self, key: object, path: tuple[str | int, ...]) -> str:
        if not isinstance(key, str):
            raise SchemaViolationError(pointer(path), f"map key {key!r} is not a string")
        _check_utf8(key, path)
        return key

    def _bytes(self, value: object, path: tuple[str | int, ...], kind: str) -> bytes:
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        if self._from_json and isinstance(value, str):
            try:
                return value.encode("iso-8859-1")
            except UnicodeEncodeError:
                raise SchemaViolationError(
                    pointer(path), f"{kind} given as text must use code points 0-255 only"
                ) from None
        raise _mismatch(kind, value, path)

    def _logical(
        self, schema: dict[str, Any], logical: str, value: object, path: tuple[str | int, ...]
    ) -> object:
        kind = schema["type"]
        if logical == "decimal" and kind in ("bytes", "fixed"):
            return _decimal(schema, value, path, self._from_json)
        if logical in _TIMESTAMPS and kind == "long":
            return self._temporal(value, path, datetime.datetime, kind)
        if logical == "date" and kind == "int":
            return self._temporal(value, path, datetime.date, kind)
        if logical in ("time-millis", "time-micros") and kind in ("int", "long"):
            return self._temporal(value, path, datetime.time, kind)
        if logical == "uuid" and kind == "string":
            return _uuid(value, path)
        return _NOT_LOGICAL

    def _temporal(
        self,
        value: object,
        path: tuple[str | int, ...],
        cls: type[datetime.date] | type[datetime.time],
        kind: str,
    ) -> object:
        if isinstance(value, cls) and not (
            cls is datetime.date and isinstance(value, datetime.datetime)
        ):
            return value
        if isinstance(value, str) and self._from_json:
            try:
                return cls.fromisoformat(value)
            except ValueError:
                raise SchemaViolationError(
                    pointer(path), f"{value!r} is not an ISO-8601 {cls.__name__}"
                ) from None
        if isinstance(value, int) and not isinstance(value, bool):
            return _integer(kind, value, path)
        raise _mismatch(f"{cls.__name__} or {kind}", value, path)


_NOT_LOGICAL = object()


def _integer(kind: str, value: object, path: tuple[str | int, ...]) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _mismatch(kind, value, path)
    low, high = _RANGES[kind]
    if not low <= value <= high:
        raise SchemaViolationError(pointer(path), f"{value} is out of range for {kind}")
    return value


def _decimal(
    schema: dict[str, Any], value: object, path: tuple[str | int, ...], from_json: bool
) -> object:
    if isinstance(value, (bytes, bytearray)) and not from_json:
        return bytes(value)
    number = _to_decimal(value, path, from_json)
    precision = int(schema.get("precision", 0))
    scale = int(schema.get("scale", 0))
    exponent = number.as_tuple().exponent
    if not isinstance(exponent, int):
        raise SchemaViolationError(pointer(path), f"{value!r} is not a finite decimal")
    if -exponent > scale:
        raise SchemaViolationError(
            pointer(path), f"{value} has more than {scale} digits after the point"
        )
    digits = number.adjusted() + 1 + scale
    if precision and number != 0 and digits > precision:
        raise SchemaViolationError(pointer(path), f"{value} has more than {precision} digits")
    return number


def _to_decimal(value: object, path: tuple[str | int, ...], from_json: bool) -> decimal.Decimal:
    if isinstance(value, decimal.Decimal):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return decimal.Decimal(value)
    if from_json and isinstance(value, (float, str)):
        try:
            return decimal.Decimal(str(value))
        except decimal.InvalidOperation:
            raise SchemaViolationError(pointer(path), f"{value!r} is not a decimal") from None
    raise _mismatch("decimal", value, path)


def _uuid(value: object, path: tuple[str | int, ...]) -> object:
    if isinstance(value, uuid.UUID):
        return value
    if not isinstance(value, str):
        raise _mismatch("uuid", value, path)
    try:
        uuid.UUID(value)
    except ValueError:
        raise SchemaViolationError(pointer(path), f"{value!r} is not a UUID") from None
    return value


def _check_utf8(text: str, path: tuple[str | int, ...]) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise SchemaViolationError(pointer(path), "text is not valid Unicode") from None


def _branch_name(branch: AvroNode) -> str:
    if isinstance(branch, dict):
        return str(branch.get("logicalType") or branch.get("name") or branch.get("type"))
    return str(branch)


def _mismatch(expected: str, value: object, path: tuple[str | int, ...]) -> SchemaViolationError:
    return SchemaViolationError(pointer(path), f"expected {expected}, got {_kind(value)}")
