"""Confluent's wire format: magic byte 0, a 4-byte big-endian schema id, then the payload.

Producers using Confluent's serializers frame every value this way, so a value that starts
with the magic byte and is long enough names the schema that encoded it.
"""

from __future__ import annotations

import struct

from spark_log.errors import InvalidRequestError

MAGIC = 0
HEADER_SIZE = 5
_HEADER = struct.Struct(">bI")
_MAX_ID = 0xFFFFFFFF


def frame(schema_id: int, payload: bytes) -> bytes:
    """``payload`` prefixed with the header naming ``schema_id`` (an unsigned 32-bit int)."""
    if not 0 <= schema_id <= _MAX_ID:
        raise InvalidRequestError(f"schema id {schema_id} is not an unsigned 32-bit integer")
    return _HEADER.pack(MAGIC, schema_id) + payload


def unframe(data: bytes) -> tuple[int, bytes] | None:
    """The schema id and payload of a framed value; None when ``data`` is not framed."""
    if len(data) < HEADER_SIZE or data[0] != MAGIC:
        return None
    _, schema_id = _HEADER.unpack_from(data)
    return schema_id, bytes(data[HEADER_SIZE:])
