"""The fields of the stream create and alter request bodies, derived from the spec's
declaration.

``StreamSpec`` declares each field once (type, default, bounds, descriptions, whether an alter
may change it); the request models are built from what these return, so a new spec field
reaches the REST API and ``/openapi.json`` without being spelled again.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, cast

from pydantic import Field
from pydantic.fields import FieldInfo

from spark_log.spec_field import Bounds, SpecField, declared_fields
from spark_log.stream_spec import StreamSpec

# the type is a resolved annotation (typing.get_type_hints), which typing gives no type
FieldDefinition = tuple[Any, FieldInfo]
"""A field as pydantic's ``create_model`` takes it: (type, FieldInfo)."""


def create_fields() -> dict[str, FieldDefinition]:
    """Every field a request may set, in the spec's order, with the spec's types, defaults
    and bounds."""
    hints = typing.get_type_hints(StreamSpec)
    return {
        f.name: (hints[f.name], _field(_default(f), declared.description, declared.bounds()))
        for f, declared in _requested()
    }


def alter_fields() -> dict[str, FieldDefinition]:
    """Every field optional (null when not sent): first the settings, then the fields fixed at
    create (immutable, or grow-only). Only alterable fields carry bounds: another value of an
    immutable one is refused as immutable (409), not as out of range (422)."""
    hints = typing.get_type_hints(StreamSpec)
    settings_first = sorted(_requested(), key=lambda entry: not entry[1].setting)
    return {
        f.name: (
            hints[f.name] | None,
            _field(None, declared.alter_description, _alter_bounds(declared)),
        )
        for f, declared in settings_first
    }


def _requested() -> list[tuple[dataclasses.Field[object], SpecField]]:
    return [(f, declared) for f, declared in declared_fields(StreamSpec) if declared.requested]


def _default(f: dataclasses.Field[object]) -> object:
    """The spec's default, or ``...`` (pydantic's "required") when it has none."""
    return ... if f.default is dataclasses.MISSING else f.default


def _alter_bounds(declared: SpecField) -> Bounds:
    return declared.bounds() if declared.alterable else {}


def _field(default: object, description: str | None, bounds: Bounds) -> FieldInfo:
    """``description`` only when there is one: pydantic counts a None it is given as set."""
    if description is None:
        field = Field(default, **bounds)
    else:
        field = Field(default, description=description, **bounds)
    # pydantic types Field as the default's type, so that it can stand as any field's default
    return cast(FieldInfo, field)
