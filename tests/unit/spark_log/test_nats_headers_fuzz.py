"""Fuzzing the NATS header parser (``Liftlog-Key``, ``Liftlog-Ack``, ``Nats-Msg-Id``,
``Liftlog-Expected-Offset``, ``Liftlog-Batch``): any header map ends in a typed refusal or in
a request whose options are well formed, and whose record stores and renders as JSON."""

from __future__ import annotations

import json

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from ingest.api.fetch_json import record_json
from ingest.produce.request import request_from_nats
from spark_log.errors import InvalidRequestError, RecordTooLargeError
from spark_log.log import build_record_batch, encode_batch, records_from_batches
from spark_log.stream_spec import ACK_POLICIES, StreamSpec
from spark_log.wire import (
    HEADER_ACK,
    HEADER_BATCH,
    HEADER_EXPECTED_OFFSET,
    HEADER_KEY,
    HEADER_MSG_ID,
)
from tests.support.fuzz_profiles import fuzz_settings

pytestmark = pytest.mark.fuzz

SPEC = StreamSpec(name="fuzz", subject="fuzz.in", max_record_bytes=64)
MAX_OFFSET = 2**63 - 1
REFUSALS = (InvalidRequestError, RecordTooLargeError)

_NAMES = [HEADER_KEY, HEADER_ACK, HEADER_MSG_ID, HEADER_EXPECTED_OFFSET, HEADER_BATCH, "X-App"]
_TRICKY = [
    "",
    " ",
    "all",
    " Leader ",
    "NONE",
    "0",
    "-1",
    "+7",
    "1_000",
    " 42 ",
    "٣",  # an Arabic-Indic digit: int() takes it, a header parser must not
    str(MAX_OFFSET),
    str(MAX_OFFSET + 1),
    "9" * 5000,
    "1e3",
    "arrow",
    "\u00e9t\u00e9",
]


def _header_maps() -> st.SearchStrategy[dict[str, str]]:
    values = st.sampled_from(_TRICKY) | st.text(max_size=12)
    return st.dictionaries(st.sampled_from(_NAMES) | st.text(max_size=8), values, max_size=6)


@given(_header_maps(), st.binary(max_size=80), st.text(max_size=10))
@fuzz_settings(quick_examples=300)
def test_any_headers_are_refused_or_parsed_into_well_formed_options(headers, data, reply):
    try:
        req = request_from_nats(SPEC.subject, reply, data, headers, SPEC)
    except REFUSALS as exc:
        event(f"refused: {exc.message[:20]}")
        return
    event("accepted")
    assert req.ack_policy in ACK_POLICIES
    assert req.expected_offset is None or 0 <= req.expected_offset <= MAX_OFFSET
    raw = headers.get(HEADER_EXPECTED_OFFSET)
    if raw is not None:
        assert raw.strip().isascii() and raw.strip().isdigit()
    if req.records is None:
        _stores_and_renders(req.key, req.value, req.headers)


def _stores_and_renders(key: bytes | None, value: bytes, headers: dict[str, str] | None) -> None:
    batch = encode_batch(0, 0, build_record_batch([1], [key], [value], [headers], ["s"]))
    (record,) = records_from_batches(batch, 0, 1, 1)
    assert record.key == key and record.value == value
    assert dict(record.headers) == {k: v.encode() for k, v in (headers or {}).items()}
    json.dumps(record_json(record, "base64"))


@pytest.mark.parametrize(
    ("text", "expected"), [("0", 0), (" 42 ", 42), (str(MAX_OFFSET), MAX_OFFSET)]
)
def test_well_formed_expected_offsets_are_accepted(text, expected):
    req = request_from_nats(SPEC.subject, "r", b"v", {HEADER_EXPECTED_OFFSET: text}, SPEC)
    assert req.expected_offset == expected


@pytest.mark.parametrize("text", ["-1", "+7", "1_000", "٣", str(MAX_OFFSET + 1), "", "1e3"])
def test_malformed_expected_offsets_are_refused(text):
    with pytest.raises(InvalidRequestError, match=HEADER_EXPECTED_OFFSET):
        request_from_nats(SPEC.subject, "r", b"v", {HEADER_EXPECTED_OFFSET: text}, SPEC)


@pytest.mark.parametrize(("text", "policy"), [("all", "all"), (" Leader ", "leader")])
def test_ack_policies_are_parsed_case_and_space_insensitively(text, policy):
    assert request_from_nats(SPEC.subject, "r", b"v", {HEADER_ACK: text}, SPEC).ack_policy == policy
