"""The stream znode's JSON: ``read_only`` is written only once true, so a writable stream's
znode reads as before the field existed."""

from __future__ import annotations

import dataclasses

from coordinator.znodes import StreamRecord
from spark_log.stream_spec import StreamSpec

RECORD = StreamRecord(StreamSpec(name="s", subject="s.in"), paused=False, created_at_ms=7)


def test_a_writable_stream_has_no_read_only_key():
    data = RECORD.to_json()
    assert "read_only" not in data
    assert StreamRecord.from_json(data) == RECORD


def test_a_read_only_stream_round_trips():
    record = dataclasses.replace(RECORD, read_only=True)
    data = record.to_json()
    assert data["read_only"] is True
    assert StreamRecord.from_json(data) == record


def test_timestamp_type_is_written_only_when_not_the_default():
    assert "timestamp_type" not in RECORD.to_json()["spec"]
    spec = dataclasses.replace(RECORD.spec, timestamp_type="create")
    record = dataclasses.replace(RECORD, spec=spec)
    assert record.to_json()["spec"]["timestamp_type"] == "create"
    assert StreamRecord.from_json(record.to_json()) == record
