"""The base of the REST response models: frozen dataclasses that read and write their JSON.

The core may not import pydantic, so the models shared by the API (which hands them to FastAPI
as ``response_model``), the client and the Spark source are plain dataclasses. ``from_json``
ignores keys it does not know, so an older client keeps working against a newer node; that
holds for nested strict types too (``StreamSpec`` refuses unknown keys in user input, but a
spec inside a response is filtered to the fields this version knows first). The
models are read by attribute only (no ``model["field"]``): a misspelt field is then an error
that mypy and the first call report, not a hand-spelled key that silently reads nothing.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, Self

from spark_log.errors import InvalidRequestError
from spark_log.json_types import JsonMapping, JsonObject, JsonValue


class JsonModel:
    """Mixin for frozen dataclasses whose fields mirror a JSON object (snake_case keys)."""

    __slots__ = ()
    if typing.TYPE_CHECKING:  # what the dataclass it is mixed into provides
        __dataclass_fields__: typing.ClassVar[dict[str, dataclasses.Field[object]]]

    @classmethod
    def from_json(cls, data: JsonMapping) -> Self:
        """Build from parsed JSON; unknown keys are skipped, nested models are built too."""
        if not isinstance(data, Mapping):
            raise InvalidRequestError(f"{cls.__name__} expects a JSON object, got {data!r:.200}")
        hints = _hints(cls)
        values = {
            f.name: _convert(hints[f.name], data[f.name])
            for f in dataclasses.fields(cls)
            if f.name in data
        }
        try:
            return cls(**values)
        except TypeError as exc:
            raise InvalidRequestError(f"{cls.__name__}: {exc}") from exc

    def to_json(self) -> JsonObject:
        """The JSON object (lists for tuples, nested models as objects)."""
        return typing.cast(JsonObject, _plain(self))


_HINTS: dict[type, dict[str, Any]] = {}  # resolved annotations: typing gives them no type


def _hints(cls: type) -> dict[str, Any]:
    """Resolved field types of ``cls`` (resolving is slow; models are few and live forever)."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def _convert(hint: Any, value: JsonValue) -> object:
    """``value`` (parsed JSON) as the field type asks: nested models, tuples of them.
    ``hint`` is a resolved annotation, which typing gives no type."""
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        return _convert(inner[0], value) if len(inner) == 1 else value
    if origin is tuple and isinstance(value, list | tuple):
        return tuple(_convert(typing.get_args(hint)[0], v) for v in value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint) and hasattr(hint, "from_json"):
        if isinstance(value, Mapping) and not issubclass(hint, JsonModel):
            # a strict parser of user input (StreamSpec refuses unknown keys); in a response
            # a newer node's extra fields are skipped, as every JsonModel skips them
            known = {f.name for f in dataclasses.fields(hint)}
            value = {k: v for k, v in value.items() if k in known}
        return hint.from_json(value)
    return value


def _plain(value: object) -> JsonValue:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
