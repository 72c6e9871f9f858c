"""The JSON answer of a REST fetch, built as plain dicts.

A fetch can return thousands of records, so no model is built per record on this hot path;
``FetchResponse`` and ``RecordJson`` stay the documented shapes, and a unit test keeps these
dicts equal to them.
"""

from __future__ import annotations

import base64
from typing import TypedDict

from spark_log.log import Record


class RecordDict(TypedDict):
    """``RecordJson``'s fields, as a plain dict."""

    offset: int
    timestamp: int
    key: str | None
    value: str | None
    headers: dict[str, str]
    subject: str


class FetchResponseDict(TypedDict):
    """``FetchResponse``'s fields, as a plain dict."""

    records: list[RecordDict]
    high_watermark: int
    log_start_offset: int
    next_offset: int
    end_reached: bool


def record_json(record: Record, encoding: str) -> RecordDict:
    """One fetched record as the JSON object ``RecordJson`` documents, built directly."""
    return {
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key": _encode(record.key, encoding),
        "value": _encode(record.value, encoding),
        "headers": {k: v.decode("utf-8", "replace") for k, v in record.headers},
        "subject": record.subject,
    }


def fetch_response_json(
    records: list[RecordDict],
    *,
    high_watermark: int,
    log_start_offset: int,
    next_offset: int,
    end_reached: bool = False,
) -> FetchResponseDict:
    """A JSON fetch answer with ``FetchResponse``'s fields, built directly."""
    return {
        "records": records,
        "high_watermark": high_watermark,
        "log_start_offset": log_start_offset,
        "next_offset": next_offset,
        "end_reached": end_reached,
    }


def _encode(data: bytes | None, encoding: str) -> str | None:
    if data is None:
        return None
    if encoding == "utf-8":
        return data.decode("utf-8", "replace")
    return base64.b64encode(data).decode("ascii")
