"""Decoded values of typed streams as the CLI prints them: JSON, whatever the schema's types.

Avro gives Python values JSON has no word for (bytes, decimals, timestamps, dates, UUIDs); they
print as text (bytes as UTF-8 where they are, else hex) so every line stays one JSON value that
``jq`` reads.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import uuid


def jsonable(value: object) -> object:
    """What ``json.dumps`` cannot write, as text; anything else is refused as json does."""
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return data.hex()
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def decoded_text(value: object) -> str:
    """One line of JSON for a decoded value."""
    return json.dumps(value, default=jsonable, ensure_ascii=False)


def decoded_json(value: object) -> object:
    """A decoded value with every part JSON can hold (for ``--json`` output)."""
    loaded: object = json.loads(decoded_text(value))
    return loaded
