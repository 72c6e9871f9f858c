"""An Avro schema document as a column layout.

Named types (records, enums, fixed) are resolved by Avro's namespace rules as the walk meets
them. Avro ``int`` and ``float`` are laid out as 64-bit columns from the start: Avro's
resolution lets a schema change promote int to long and float to double, and a Delta append
cannot widen a column, so a 64-bit column is the one layout both versions fit. Times of day
(``time-millis``, ``time-micros``) are int64 microseconds since midnight: Delta has no time
type. A record met again while its own fields are being laid out is recursive: no column type
bounds its depth, so it is refused, naming the field. Unknown or ill-formed logical types fall
back to their underlying type, as the Avro specification says a reader must.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

from spark_log.json_types import JsonMapping, JsonValue
from spark_log.schemas.column_layout import (
    ColumnKind,
    ColumnLayout,
    list_of,
    map_of,
    record,
)
from spark_log.schemas.layout_errors import UnsupportedSchemaError

DELTA_MAX_DECIMAL_PRECISION = 38
_UTC_TIMESTAMP = pa.timestamp("us", tz="UTC")

_PRIMITIVES: Mapping[str, pa.DataType] = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int64(),  # wide from the start: int→long never changes the table
    "long": pa.int64(),
    "float": pa.float64(),  # and float→double neither
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}

# (logical type, underlying type) → Arrow type; timestamps are kept in microseconds, the
# precision of Delta's and Spark's timestamps, whatever the Avro precision.
_LOGICAL: Mapping[tuple[str, str], pa.DataType] = {
    ("date", "int"): pa.date32(),
    ("timestamp-millis", "long"): _UTC_TIMESTAMP,
    ("timestamp-micros", "long"): _UTC_TIMESTAMP,
    ("local-timestamp-millis", "long"): pa.timestamp("us"),
    ("local-timestamp-micros", "long"): pa.timestamp("us"),
}


_TIMES_OF_DAY: Mapping[tuple[str, str], ColumnKind] = {
    ("time-millis", "int"): ColumnKind.TIME_MILLIS,
    ("time-micros", "long"): ColumnKind.TIME_MICROS,
}
"""Times of day: int64 microseconds since midnight (Delta refuses Arrow's time types)."""


def avro_layout(document: JsonValue) -> ColumnLayout:
    """The layout of values written with this Avro schema."""
    return _AvroWalk().column(document, namespace="", path="value")


class _AvroWalk:
    def __init__(self) -> None:
        self.named: dict[str, ColumnLayout] = {}
        self.open: set[str] = set()  # records whose fields are being laid out

    def column(self, schema: JsonValue, namespace: str, path: str) -> ColumnLayout:
        if isinstance(schema, str):
            return self.reference(schema, namespace, path)
        if isinstance(schema, list):
            return self.union(schema, namespace, path)
        if isinstance(schema, dict):
            return self.complex(schema, namespace, path)
        raise UnsupportedSchemaError(f"{path}: {schema!r} is not an Avro schema")

    def reference(self, name: str, namespace: str, path: str) -> ColumnLayout:
        if name in _PRIMITIVES:
            return ColumnLayout(_PRIMITIVES[name])
        full = name if "." in name or not namespace else f"{namespace}.{name}"
        for candidate in (full, name):
            if candidate in self.open:
                raise UnsupportedSchemaError(
                    f"{path} refers to the record {candidate} that contains it: a recursive "
                    "schema has no typed columns"
                )
            if candidate in self.named:
                return self.named[candidate]
        raise UnsupportedSchemaError(f"{path}: unknown Avro type {name!r}")

    def union(self, branches: list[JsonValue], namespace: str, path: str) -> ColumnLayout:
        """A union with null is its other branch, nullable; one of several types is a struct
        with a field per branch, named as Avro's JSON encoding names the branch."""
        typed = [b for b in branches if b != "null" and not _is_null_dict(b)]
        if not typed:
            return ColumnLayout(pa.null())
        if len(typed) == 1:
            return self.column(typed[0], namespace, path)
        names = _branch_names(typed, namespace)
        children = [
            (name, self.column(branch, namespace, f"{path}.{name}"))
            for name, branch in zip(names, typed, strict=True)
        ]
        return ColumnLayout(record(children).arrow, ColumnKind.UNION, tuple(children))

    def complex(self, schema: JsonMapping, namespace: str, path: str) -> ColumnLayout:
        kind = schema.get("type")
        if isinstance(kind, (dict, list)):
            return self.column(kind, namespace, path)
        if kind in ("record", "error"):
            return self.record(schema, namespace, path)
        if kind == "enum":
            return self.define(schema, namespace, ColumnLayout(pa.string()))
        if kind == "fixed":
            return self.define(schema, namespace, _with_logical(schema, "fixed"))
        if kind == "array":
            return list_of(self.column(schema.get("items"), namespace, f"{path}.element"))
        if kind == "map":
            return map_of(self.column(schema.get("values"), namespace, f"{path}.value"))
        if isinstance(kind, str) and kind in _PRIMITIVES:
            return _with_logical(schema, kind)
        if isinstance(kind, str):
            return self.reference(kind, namespace, path)
        raise UnsupportedSchemaError(f"{path}: {schema!r} has no Avro type")

    def record(self, schema: JsonMapping, namespace: str, path: str) -> ColumnLayout:
        full, own_namespace = _full_name(schema, namespace)
        self.open.add(full)
        children = []
        for field in schema.get("fields", []):
            name = field.get("name") if isinstance(field, dict) else None
            if not isinstance(name, str) or "type" not in field:
                raise UnsupportedSchemaError(f"{path}: {field!r} is not an Avro record field")
            children.append((name, self.column(field["type"], own_namespace, f"{path}.{name}")))
        self.open.discard(full)
        layout = record(children)
        self.named[full] = layout
        return layout

    def define(self, schema: JsonMapping, namespace: str, layout: ColumnLayout) -> ColumnLayout:
        full, _ = _full_name(schema, namespace)
        self.named[full] = layout
        return layout


def _with_logical(schema: JsonMapping, underlying: str) -> ColumnLayout:
    logical = schema.get("logicalType")
    if logical == "decimal" and underlying in ("bytes", "fixed"):
        return _decimal(schema, underlying)
    if logical == "uuid" and underlying == "string":
        return ColumnLayout(pa.string(), ColumnKind.UUID)
    if isinstance(logical, str) and (logical, underlying) in _TIMES_OF_DAY:
        return ColumnLayout(pa.int64(), _TIMES_OF_DAY[(logical, underlying)])
    if isinstance(logical, str) and (logical, underlying) in _LOGICAL:
        return ColumnLayout(_LOGICAL[(logical, underlying)])
    return ColumnLayout(pa.binary() if underlying == "fixed" else _PRIMITIVES[underlying])


def _decimal(schema: JsonMapping, underlying: str) -> ColumnLayout:
    """decimal(p, s) as Arrow's decimal128; wider than Delta's 38 digits it is kept as text,
    which loses no digit, rather than refused."""
    precision, scale = schema.get("precision"), schema.get("scale", 0)
    if (
        not isinstance(precision, int)
        or not isinstance(scale, int)
        or isinstance(precision, bool)
        or precision <= 0
        or not 0 <= scale <= precision
    ):
        return ColumnLayout(pa.binary())
    if precision > DELTA_MAX_DECIMAL_PRECISION:
        return ColumnLayout(pa.string(), ColumnKind.DECIMAL_TEXT)
    return ColumnLayout(pa.decimal128(precision, scale))


def _full_name(schema: JsonMapping, namespace: str) -> tuple[str, str]:
    """A named type's full name and the namespace its own fields are resolved in."""
    name = str(schema.get("name", ""))
    if "." in name:
        return name, name.rpartition(".")[0]
    own = schema.get("namespace", namespace) or ""
    return (f"{own}.{name}" if own else name), own


def _is_null_dict(schema: JsonValue) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null"


def _branch_names(branches: list[JsonValue], namespace: str) -> list[str]:
    """Each branch's type name: the primitive, ``array`` or ``map``, or a named type's short
    name (its full name, dots as underscores, when two short names clash)."""
    full = [_type_name(branch, namespace) for branch in branches]
    short = [name.rpartition(".")[2] for name in full]
    if len(set(short)) == len(short):
        return short
    return [name.replace(".", "_") for name in full]


def _type_name(schema: JsonValue, namespace: str) -> str:
    if isinstance(schema, str):
        if schema in _PRIMITIVES or "." in schema or not namespace:
            return schema
        return f"{namespace}.{schema}"
    if isinstance(schema, dict):
        kind = schema.get("type")
        if kind in ("record", "error", "enum", "fixed"):
            return _full_name(schema, namespace)[0]
        return _type_name(kind, namespace)
    return "union"
