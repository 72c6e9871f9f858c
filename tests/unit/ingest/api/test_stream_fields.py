"""The stream create and alter request models are the spec's declaration, nothing spelled
again: every field a request may set, with the spec's defaults and bounds."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import ValidationError

from ingest.api.models import StreamAlter, StreamCreate
from spark_log.spec_field import declared_fields
from spark_log.stream_spec import ALTERABLE_FIELDS, IMMUTABLE_FIELD_REASONS, StreamSpec

REQUESTED = [f.name for f, declared in declared_fields(StreamSpec) if declared.requested]


def test_create_takes_every_requested_field_in_the_spec_order_with_its_default() -> None:
    assert list(StreamCreate.model_fields) == REQUESTED
    created = StreamCreate.model_validate({"name": "orders", "subject": "orders.in"})
    assert StreamSpec(**created.model_dump()) == StreamSpec("orders", "orders.in")


def test_only_the_nodes_set_internal() -> None:
    assert "internal" not in REQUESTED
    with pytest.raises(ValidationError, match="internal"):
        StreamCreate.model_validate({"name": "o", "subject": "o.in", "internal": True})
    with pytest.raises(ValidationError, match="internal"):
        StreamAlter.model_validate({"internal": False})


def test_alter_takes_the_settings_first_then_the_fields_fixed_at_create() -> None:
    fields = list(StreamAlter.model_fields)
    fixed = [name for name in REQUESTED if name in IMMUTABLE_FIELD_REASONS or name == "partitions"]
    assert sorted(fields) == sorted(REQUESTED)
    assert fields[-len(fixed) :] == fixed
    assert StreamAlter.model_validate({}).model_dump(exclude_unset=True) == {}


def test_every_field_is_alterable_or_says_why_not() -> None:
    names = [f.name for f in dataclasses.fields(StreamSpec)]
    assert sorted(ALTERABLE_FIELDS + tuple(IMMUTABLE_FIELD_REASONS)) == sorted(names)


def test_alter_bounds_only_the_alterable_fields() -> None:
    """An immutable field with another value is 409 ``immutable_field`` from the spec, never
    a 422 for its range."""
    assert StreamAlter.model_validate({"replication_factor": 0}).model_dump(exclude_unset=True)
    with pytest.raises(ValidationError, match="partitions"):
        StreamAlter.model_validate({"partitions": 0})
    with pytest.raises(ValidationError, match="retention_ms"):
        StreamCreate.model_validate({"name": "o", "subject": "o.in", "retention_ms": 0})
