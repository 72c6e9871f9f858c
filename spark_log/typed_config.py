"""Load frozen dataclasses from plain mappings, rejecting unknown keys and wrong types.

A misspelt key must never be ignored silently (a misspelt timeout once disabled a safety check
in a Jepsen run), so every level of a config mapping is checked against the dataclass fields.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol, TypeVar, get_args, get_origin, get_type_hints

from spark_log.errors import ConfigError
from spark_log.json_types import JsonMapping, JsonObject, JsonValue


class DataclassInstance(Protocol):
    """Any dataclass (instance or class): what ``dataclasses.fields`` and ``asdict`` take."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[object]]]


DataclassT = TypeVar("DataclassT", bound=DataclassInstance)


def from_mapping(cls: type[DataclassT], data: JsonMapping, where: str = "") -> DataclassT:
    """Build ``cls`` (a dataclass) from ``data``; raise ConfigError naming the bad key."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where or cls.__name__}: expected a table, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(
            f"unknown key(s) {', '.join(_join(where, k) for k in unknown)}; "
            f"known{' in ' + where if where else ''}: {', '.join(sorted(fields))}"
        )
    hints = get_type_hints(cls)
    values = {name: _coerce(hints[name], value, _join(where, name)) for name, value in data.items()}
    try:
        return cls(**values)
    except TypeError as exc:  # a required field is missing
        raise ConfigError(f"{where or cls.__name__}: {exc}") from exc


def to_mapping(obj: DataclassInstance) -> JsonObject:
    """The inverse of ``from_mapping`` for JSON/TOML output."""
    return dataclasses.asdict(obj)


def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _coerce(hint: Any, value: JsonValue, where: str) -> object:
    """``value`` checked against ``hint``, a resolved annotation (a class, a Union, a Literal):
    typing gives such an annotation no type, hence Any here and in the helpers below."""
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return _coerce_union(hint, value, where)
    if origin is typing.Literal:
        if value not in get_args(hint):
            allowed = ", ".join(repr(a) for a in get_args(hint))
            raise ConfigError(f"{where}: {value!r} is not one of {allowed}")
        return value
    if origin in (tuple, list):
        return _coerce_sequence(hint, value, where)
    if origin is dict:
        return _coerce_table(hint, value, where)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return from_mapping(hint, value, where)
    return _coerce_scalar(hint, value, where)


def _coerce_union(hint: Any, value: JsonValue, where: str) -> object:
    args = get_args(hint)
    if value is None:
        if type(None) in args:
            return None
        raise ConfigError(f"{where}: must not be null")
    errors = []
    for arg in args:
        if arg is type(None):
            continue
        try:
            return _coerce(arg, value, where)
        except ConfigError as exc:
            errors.append(str(exc))
    raise ConfigError("; ".join(errors))


def _coerce_sequence(hint: Any, value: JsonValue, where: str) -> tuple[object, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ConfigError(f"{where}: expected a list, got {type(value).__name__}")
    args = get_args(hint)
    item = args[0] if args else Any
    return tuple(_coerce(item, v, f"{where}[{i}]") for i, v in enumerate(value))


def _coerce_table(hint: Any, value: JsonValue, where: str) -> dict[object, object]:
    """A free-form table (``dict[str, str]``): keys and values checked against the hint; which
    keys are allowed is the dataclass's own check (``__post_init__``)."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected a table, got {type(value).__name__}")
    key_hint, value_hint = get_args(hint) or (Any, Any)
    return {
        _coerce(key_hint, k, where): _coerce(value_hint, v, _join(where, str(k)))
        for k, v in value.items()
    }


def _coerce_scalar(hint: Any, value: JsonValue, where: str) -> object:
    if hint is Any:
        return value
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if hint in (int, float) and isinstance(value, bool):
        raise ConfigError(f"{where}: expected {hint.__name__}, got bool")
    if not isinstance(value, hint):
        raise ConfigError(f"{where}: expected {hint.__name__}, got {type(value).__name__}")
    return value
