"""The JSON fetch answer is built as dicts on the hot path; its shape must stay the one
``FetchResponse``/``RecordJson`` document (the route's response model in OpenAPI)."""

from __future__ import annotations

import dataclasses

import pytest

from ingest.api.fetch_json import fetch_response_json, record_json
from spark_log.api_models import FetchResponse, RecordJson
from spark_log.log import Record


def _record(key: bytes | None) -> Record:
    return Record(7, 1_700_000_000_000, key, b"v\xff", [("h", b"x")], "orders.in")


@pytest.mark.parametrize("encoding", ["base64", "utf-8"])
@pytest.mark.parametrize("key", [b"k", None])
def test_record_dicts_have_exactly_the_model_fields(encoding, key):
    body = record_json(_record(key), encoding)
    assert list(body) == [f.name for f in dataclasses.fields(RecordJson)]
    assert RecordJson.from_json(body).to_json() == body


def test_fetch_dicts_have_exactly_the_model_fields_and_round_trip():
    records = [record_json(_record(b"k"), "base64"), record_json(_record(None), "utf-8")]
    body = fetch_response_json(records, high_watermark=8, log_start_offset=0, next_offset=8)
    assert list(body) == [f.name for f in dataclasses.fields(FetchResponse)]
    parsed = FetchResponse.from_json(body)
    assert parsed.to_json() == body
    assert parsed.records[0].value == "dv8=" and parsed.records[1].key is None
