"""The leader's write path on a read-only stream and after an alter (no NATS, no ZooKeeper):
``stream_readonly`` error acks, nothing stored, and an altered spec applied from the next
message on."""

from __future__ import annotations

import dataclasses

import pytest

from ingest.produce.request import local_request
from spark_log.errors import StreamReadOnlyError
from tests.unit.ingest.conftest import eventually
from tests.unit.ingest.produce import test_write_path
from tests.unit.ingest.produce.test_write_path import SPEC, Msg, Rig, _arrow

rig = test_write_path.rig  # the same rig: a real log, a leader partition, no NATS

READ_ONLY_ERROR = {"code": "stream_readonly", "message": "stream orders is read-only"}


def _readonly_drops(rig: Rig) -> float | None:
    return rig.metrics.registry.get_sample_value(
        "liftlog_readonly_drops_total", {"stream": "orders", "partition": "0"}
    )


async def test_a_read_only_leader_answers_stream_readonly_and_stores_nothing(rig: Rig):
    rig.partition.read_only = True
    rig.path.on_messages([Msg("orders.in", "r1", b"one")])
    headers = {"Liftlog-Batch": "arrow"}
    rig.path.on_messages([Msg("orders.in", "r2", _arrow([b"a", b"b"]), headers)])
    rig.path.on_messages([Msg("orders.in", "", b"nobody to tell")])
    await eventually(lambda: len(rig.sent) == 2, what="two error acks")
    expected = {"stream": "orders", "partition": 0, "error": READ_ONLY_ERROR}
    assert rig.acks("r1") == [expected] and rig.acks("r2") == [expected]
    assert _readonly_drops(rig) == 1.0
    assert rig.log.log_end_offset == 0


async def test_requests_queued_before_the_flag_are_refused_by_the_writer(rig: Rig):
    """The writer checks the flag per cycle, so what was queued when it arrived is refused
    too (a REST publish goes through the same writer)."""
    rig.partition.read_only = True
    request = local_request("orders.in", "leader", value=b"queued")
    with pytest.raises(StreamReadOnlyError, match="read-only"):
        await rig.path.produce([request])
    assert rig.log.log_end_offset == 0


async def test_a_leader_set_read_write_again_records_again(rig: Rig):
    rig.partition.read_only = True
    rig.path.on_messages([Msg("orders.in", "r1", b"refused")])
    rig.partition.read_only = False
    rig.path.on_messages([Msg("orders.in", "r2", b"stored")])
    await eventually(lambda: rig.acks("r2"), what="the ack after read-write")
    assert rig.acks("r2") == [{"stream": "orders", "partition": 0, "offset": 0}]
    assert rig.log.log_end_offset == 1


async def test_an_adopted_spec_applies_from_the_next_message(rig: Rig):
    rig.path.on_messages([Msg("orders.in", "r1", b"x" * 100)])
    await eventually(lambda: rig.acks("r1"), what="the first ack")
    rig.path.adopt_spec(dataclasses.replace(SPEC, max_record_bytes=10))
    rig.path.on_messages([Msg("orders.in", "r2", b"x" * 100)])
    await eventually(lambda: rig.acks("r2"), what="the refusal")
    assert rig.acks("r2")[0]["error"]["code"] == "record_too_large"
    assert rig.log.log_end_offset == 1
