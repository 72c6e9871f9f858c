"""Record timestamps of ``timestamp_type: create`` streams: the producer's
``Liftlog-Timestamp`` within the skew bound, append time otherwise (pure, no I/O)."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest

from ingest.produce.dedup import DedupWindow
from ingest.produce.request import (
    ProduceRequest,
    create_timestamp,
    normalize_batch_table,
    request_from_nats,
)
from ingest.produce.sequencer import Sequencer
from spark_log.errors import InvalidTimestampError
from spark_log.log import records_from_batches
from spark_log.stream_spec import StreamSpec

APPEND = StreamSpec(name="s", subject="s.in")
CREATE = dataclasses.replace(APPEND, timestamp_type="create")
NOW = 1_700_000_000_000
SKEW = 60_000


def _sequence(items: list[ProduceRequest]) -> tuple[list[int], list]:
    """The stored timestamps of ``items`` sequenced at NOW, and the refusals."""
    errors: list = []
    seq = Sequencer(
        CREATE, DedupWindow(60_000, 100), lambda r, e: errors.append(e), max_timestamp_skew_ms=SKEW
    )
    cycle = seq.sequence(items, next_offset=0, leader_epoch=0, now=NOW, isr_ok=True)
    data = b"".join(cycle.batches)
    records = records_from_batches(data, 0, cycle.end_offset, 1000)
    return [r.timestamp for r in records], errors


def _nats(value: bytes, timestamp: str | None, spec: StreamSpec = CREATE) -> ProduceRequest:
    headers = {"Liftlog-Timestamp": timestamp} if timestamp is not None else None
    return request_from_nats("s.in", "r", value, headers, spec)


def test_a_create_time_within_the_skew_is_the_records_timestamp():
    stamps, errors = _sequence([_nats(b"a", str(NOW - SKEW)), _nats(b"b", str(NOW + 5))])
    assert errors == [] and stamps == [NOW - SKEW, NOW + 5]


def test_without_the_header_the_append_time_is_used():
    stamps, errors = _sequence([_nats(b"a", None)])
    assert errors == [] and stamps == [NOW]


def test_a_log_append_stream_ignores_the_header():
    assert _nats(b"a", "12", APPEND).timestamp_ms is None
    assert create_timestamp({"Liftlog-Timestamp": "not a number"}, APPEND) is None


@pytest.mark.parametrize("offset_ms", [-SKEW - 1, SKEW + 1])
def test_a_create_time_beyond_the_skew_is_refused_and_not_stored(offset_ms):
    stamps, errors = _sequence([_nats(b"far", str(NOW + offset_ms)), _nats(b"ok", None)])
    assert stamps == [NOW]  # only the second record is stored
    assert len(errors) == 1 and isinstance(errors[0], InvalidTimestampError)
    assert "ingest.max_timestamp_skew_ms" in errors[0].message


@pytest.mark.parametrize("text", ["-5", "1.5", "abc", "", "9" * 30])
def test_a_malformed_header_is_refused(text):
    with pytest.raises(InvalidTimestampError, match="Liftlog-Timestamp"):
        _nats(b"a", text)


def test_a_producer_batch_takes_the_create_time_for_every_record():
    table = normalize_batch_table(pa.table({"value": [b"b1", b"b2"]}), CREATE)
    req = ProduceRequest("s.in", None, "all", None, None, records=table, timestamp_ms=NOW - 7)
    stamps, errors = _sequence([req])
    assert errors == [] and stamps == [NOW - 7, NOW - 7]
