"""Strict reading and writing of JSON values for both schema formats.

Python's ``json`` accepts NaN and Infinity, which are not JSON; a record carrying them would be
unreadable by every other consumer, so they are refused here like any other malformed text.
"""

from __future__ import annotations

import json

from spark_log.schemas.errors import SchemaViolationError


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


def load_json(text: bytes) -> object:
    """The JSON value of ``text`` (UTF-8); SchemaViolationError for the root when it is not."""
    try:
        decoded = bytes(text).decode("utf-8")
    except UnicodeDecodeError as error:
        raise SchemaViolationError("", f"value is not valid UTF-8: {error.reason}") from None
    try:
        return json.loads(decoded, parse_constant=_refuse_constant)
    except RecursionError:
        raise SchemaViolationError("", "value is not JSON: nested too deeply") from None
    except ValueError as error:
        raise SchemaViolationError("", f"value is not JSON: {error}") from None


def dump_json(value: object) -> bytes:
    """Compact UTF-8 JSON text of ``value``; SchemaViolationError if it is not JSON-able."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode(
            "utf-8"
        )
    except RecursionError:
        raise SchemaViolationError("", "value is nested too deeply") from None
    except UnicodeEncodeError as error:
        raise SchemaViolationError(
            "", f"value has text that is not UTF-8: {error.reason}"
        ) from None
    except (TypeError, ValueError) as error:
        raise SchemaViolationError("", f"value cannot be written as JSON: {error}") from None


def pointer(path: tuple[str | int, ...] | list[str | int]) -> str:
    """A JSON-pointer-like path ("/items/2/price") of a sequence of keys and indexes."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)
