"""What typed publish and decode do to one value, apart from fetching schemas.

A value that is bytes or text is sent as given (text as UTF-8), as before typed streams: on a
bound stream the leader checks text as plain JSON. Any other value (a dict, a list, a number,
a bool, a dataclass) is a datum: serialised with the subject's latest schema and framed with
its id (Confluent's wire format), so the record is byte-identical to what Confluent's
serializers write. Decoding reverses it: a framed value by the schema its id names.
"""

from __future__ import annotations

import dataclasses
from typing import TypeGuard

from spark_log.client.schema_registry import LatestSchema
from spark_log.errors import InvalidRequestError
from spark_log.schemas import frame
from spark_log.schemas.json_text import load_json
from spark_log.value_schema import ValueSchema

RawValue = bytes | bytearray | memoryview | str
_RAW_TYPES = (bytes, bytearray, memoryview, str)


def is_raw(value: object) -> TypeGuard[RawValue]:
    """Bytes or text: sent unchanged, never serialised."""
    return isinstance(value, _RAW_TYPES)


def raw_bytes(value: RawValue) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)


def binding_of(stream: str, binding: ValueSchema | None, value: object) -> ValueSchema:
    """The stream's binding, which a datum needs; InvalidRequestError on an unbound stream (or
    for None, which no record can hold)."""
    if value is None:
        raise InvalidRequestError(
            f"a record of stream {stream} needs a value: None is no value (pass b'' for an "
            "empty one)"
        )
    if binding is None:
        raise InvalidRequestError(
            f"stream {stream} has no value schema, so a {type(value).__name__} value cannot be "
            "serialised: bind a schema (value_schema at stream create or alter) or pass bytes "
            "or JSON text"
        )
    return binding


def serialize(stream: str, binding: ValueSchema, latest: LatestSchema, value: object) -> bytes:
    """``value`` validated against and written with ``latest`` (SchemaViolationError naming
    the field when it does not match), framed with its id."""
    kind = latest.parsed.schema_type
    if str(kind) != binding.schema_type:
        raise InvalidRequestError(
            f"stream {stream} takes {binding.format} values, but the latest schema of subject "
            f"{binding.subject!r} is {kind}"
        )
    return frame(latest.schema_id, latest.parsed.encode(as_datum(value)))


def as_datum(value: object) -> object:
    """A dataclass instance as the dict of its fields; any other value as it is."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def decode_unframed(value: bytes) -> object:
    """An unframed value of a bound stream: plain JSON (SchemaViolationError when it is not)."""
    return load_json(value)
