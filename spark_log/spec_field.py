"""What a stream spec's field declares beside its name, type and default: whether an alter may
change it, the bounds a request is held to, and how the REST API describes it.

``StreamSpec`` carries a ``SpecField`` in the dataclass metadata of each field that needs one,
so the REST request models (create, alter) and the alter rules are derived from the spec's own
declaration, and a new field is declared in one place. The core stays free of pydantic: the
API builds its models from what is read here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

SPEC_FIELD_KEY = "liftlog.spec_field"
"""The dataclass metadata key that holds a field's ``SpecField``."""


class Bounds(TypedDict, total=False):
    """A field's lower bounds, by the keyword pydantic and annotated-types name them."""

    ge: int
    gt: int


@dataclass(frozen=True)
class SpecField:
    """One field's declaration; a field without one is an alterable setting, unbounded and
    undescribed."""

    description: str | None = None
    """How a create request (``POST /v1/streams``) describes the field."""
    alter_description: str | None = None
    """How an alter request (``PATCH /v1/streams/{stream}``) describes it."""
    immutable: str | None = None
    """Why an alter cannot change the field (None: it can); an alter that sends the current
    value is still accepted."""
    grow_only: bool = False
    """An alter may only raise the value (``partitions``: removing one drops its records)."""
    ge: int | None = None
    """The least value a request may send (JSON Schema's ``minimum``)."""
    gt: int | None = None
    """The value a request must exceed (JSON Schema's ``exclusiveMinimum``)."""
    requested: bool = True
    """False for a field only the nodes set (``internal``): no request names it."""

    @property
    def alterable(self) -> bool:
        return self.immutable is None

    @property
    def setting(self) -> bool:
        """Alterable to any value: every node applies it to the logs it already holds."""
        return self.alterable and not self.grow_only

    def bounds(self) -> Bounds:
        """The lower bounds that are set."""
        found: Bounds = {}
        if self.ge is not None:
            found["ge"] = self.ge
        if self.gt is not None:
            found["gt"] = self.gt
        return found

    def as_metadata(self) -> Mapping[str, SpecField]:
        """The dataclass metadata that declares a field with this: ``field(metadata=...)``."""
        return {SPEC_FIELD_KEY: self}


_UNDECLARED = SpecField()


def declared_fields(cls: type) -> tuple[tuple[dataclasses.Field[Any], SpecField], ...]:
    """Every field of the dataclass ``cls``, in order, with its declaration."""
    return tuple((f, f.metadata.get(SPEC_FIELD_KEY, _UNDECLARED)) for f in dataclasses.fields(cls))
