"""The auto-pause fields of the stream spec and the stream record's idle marks: validated,
alterable, and written only when set (so znodes without them read as before)."""

from __future__ import annotations

import pytest

from coordinator.znodes import StreamRecord
from spark_log.errors import InvalidRequestError
from spark_log.stream_spec import StreamSpec, altered_spec

SPEC = StreamSpec("s", "s.in")


def test_auto_pause_is_written_only_when_set_and_reads_back():
    assert "auto_pause_ms" not in SPEC.to_json()
    assert "auto_pause_disable_if_subscribers" not in SPEC.to_json()
    spec = StreamSpec("s", "s.in", auto_pause_ms=1000, auto_pause_disable_if_subscribers=True)
    data = spec.to_json()
    assert (data["auto_pause_ms"], data["auto_pause_disable_if_subscribers"]) == (1000, True)
    assert StreamSpec.from_json(data) == spec


@pytest.mark.parametrize("value", [0, -1, 2**63])
def test_auto_pause_ms_must_be_a_positive_int64(value):
    with pytest.raises(InvalidRequestError, match="auto_pause_ms"):
        StreamSpec("s", "s.in", auto_pause_ms=value)


def test_auto_pause_is_alterable_and_null_turns_it_off():
    on = altered_spec(SPEC, {"auto_pause_ms": 500, "auto_pause_disable_if_subscribers": True})
    assert (on.auto_pause_ms, on.auto_pause_disable_if_subscribers) == (500, True)
    assert altered_spec(on, {"auto_pause_ms": None}).auto_pause_ms is None


def test_idle_marks_are_written_only_while_a_partition_is_idle():
    record = StreamRecord(spec=SPEC, paused=False, created_at_ms=1)
    assert "idle_paused_partitions" not in record.to_json()
    idle = StreamRecord(spec=SPEC, paused=False, created_at_ms=1, idle_paused_partitions=(2, 0))
    assert idle.to_json()["idle_paused_partitions"] == [0, 2]
    assert StreamRecord.from_json(idle.to_json()).idle_paused_partitions == (0, 2)
