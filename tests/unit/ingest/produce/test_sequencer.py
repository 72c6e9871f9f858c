"""Sequencing a writer cycle: offsets, dedup, expected offsets, producer batches, min ISR."""

from __future__ import annotations

import pyarrow as pa
import pytest

from ingest.produce.dedup import DedupWindow
from ingest.produce.request import ProduceRequest, normalize_batch_table
from ingest.produce.sequencer import Sequencer, refused_for_min_isr
from spark_log.log import iter_batches, records_from_batches
from spark_log.stream_spec import StreamSpec

SPEC = StreamSpec(name="s", subject="s.in")


def _req(value: bytes, **kw) -> ProduceRequest:
    return ProduceRequest(
        subject="s.in",
        reply=None,
        ack_policy="all",
        msg_id=kw.pop("msg_id", None),
        expected_offset=kw.pop("expected", None),
        value=value,
        **kw,
    )


def _sequencer() -> tuple[Sequencer, list]:
    errors: list = []
    return Sequencer(SPEC, DedupWindow(60_000, 100), lambda r, e: errors.append((r, e))), errors


def test_offsets_are_dense_and_batches_keep_arrival_order():
    seq, errors = _sequencer()
    table = normalize_batch_table(pa.table({"value": [b"b1", b"b2"]}), SPEC)
    items = [_req(b"a"), ProduceRequest("s.in", None, "all", None, None, records=table), _req(b"c")]
    cycle = seq.sequence(items, next_offset=10, leader_epoch=3, now=1000, isr_ok=True)
    assert errors == []
    assert [(s.offset, s.count) for s in cycle.sequenced] == [(10, 1), (11, 2), (13, 1)]
    assert cycle.end_offset == 14
    data = b"".join(cycle.batches)
    headers = [h for h, _ in iter_batches(data)]
    assert [(h.base_offset, h.record_count, h.leader_epoch) for h in headers] == [
        (10, 1, 3),
        (11, 2, 3),
        (13, 1, 3),
    ]
    values = [r.value for r in records_from_batches(data, 10, 14, 100)]
    assert values == [b"a", b"b1", b"b2", b"c"]


def test_duplicates_and_expected_offsets():
    seq, errors = _sequencer()
    items = [
        _req(b"a", msg_id="m1"),
        _req(b"a2", msg_id="m1"),
        _req(b"b", expected=1),
        _req(b"c", expected=5),
    ]
    cycle = seq.sequence(items, next_offset=0, leader_epoch=0, now=1000, isr_ok=True)
    assert [(s.offset, s.duplicate) for s in cycle.sequenced] == [(0, False), (0, True), (1, False)]
    assert [e.code for _r, e in errors] == ["expected_offset_mismatch"]
    assert cycle.end_offset == 2
    later = seq.sequence(
        [_req(b"again", msg_id="m1")], next_offset=2, leader_epoch=0, now=2000, isr_ok=True
    )
    assert later.sequenced[0].duplicate and later.batches == []


async def test_next_cycle_bounds_records_and_bytes():
    import asyncio

    from ingest.produce.sequencer import next_cycle

    queue = [_req(b"x" * 100) for _ in range(10)]
    wakeup = asyncio.Event()
    assert len(await next_cycle(queue, wakeup, 0.01, max_records=4, max_bytes=10_000)) == 4
    assert len(await next_cycle(queue, wakeup, 0.01, max_records=100, max_bytes=250)) == 2
    big = [_req(b"x" * 1000)]
    assert len(await next_cycle(big, wakeup, 0.01, max_records=100, max_bytes=10)) == 1
    assert await next_cycle([], wakeup, 0.01, max_records=1, max_bytes=1) == []


def test_large_producer_batches_are_stored_as_several_batches():
    seq, _errors = _sequencer()
    table = normalize_batch_table(pa.table({"value": [b"x" * 1024] * 1500}), SPEC)
    batch = ProduceRequest("s.in", None, "all", None, None, records=table)
    cycle = seq.sequence([batch], 0, 0, 1, isr_ok=True)
    headers = [h for h, _ in iter_batches(b"".join(cycle.batches))]
    assert len(headers) > 1
    assert all(len(b) < 1024 * 1024 for b in cycle.batches)
    assert [h.base_offset for h in headers] == sorted(h.base_offset for h in headers)
    assert sum(h.record_count for h in headers) == 1500 == cycle.end_offset
    assert (cycle.sequenced[0].offset, cycle.sequenced[0].count) == (0, 1500)


def _answered(policy: str, value: bytes = b"v", **kw) -> ProduceRequest:
    """A request somebody waits for (it has a reply subject)."""
    return ProduceRequest("s.in", "reply", policy, kw.pop("msg_id", None), None, value=value, **kw)


@pytest.mark.parametrize(
    ("policy", "reply", "isr_ok", "refused"),
    [
        ("all", "r", False, True),
        ("all", "r", True, False),
        ("leader", "r", False, False),
        ("none", "r", False, False),
        ("all", None, False, False),  # a plain publish: no ack to withhold
    ],
)
def test_only_answered_acks_all_is_refused_for_min_isr(policy, reply, isr_ok, refused):
    req = ProduceRequest("s.in", reply, policy, None, None, value=b"v")
    assert refused_for_min_isr(req, isr_ok) is refused


def test_a_short_isr_refuses_acks_all_before_it_gets_an_offset():
    seq, errors = _sequencer()
    table = normalize_batch_table(pa.table({"value": [b"b1", b"b2"]}), SPEC)
    items = [
        _answered("all", b"refused"),
        _answered("leader", b"kept"),
        ProduceRequest("s.in", "reply", "all", None, None, records=table),
        _answered("none", b"kept too"),
    ]
    cycle = seq.sequence(items, next_offset=5, leader_epoch=0, now=1000, isr_ok=False)
    assert [(e.code, r.ack_policy) for r, e in errors] == [
        ("not_enough_replicas", "all"),
        ("not_enough_replicas", "all"),
    ]
    kept = [(s.request.value, s.offset) for s in cycle.sequenced]
    assert kept == [(b"kept", 5), (b"kept too", 6)]
    assert cycle.end_offset == 7
    values = [r.value for r in records_from_batches(b"".join(cycle.batches), 5, 7, 10)]
    assert values == [b"kept", b"kept too"]


def test_a_refused_request_leaves_its_msg_id_unrecorded():
    """Min ISR is checked before dedup: a refusal records no id, so the retry is stored."""
    seq, errors = _sequencer()
    seq.sequence([_answered("all", msg_id="m1")], 0, 0, 1000, isr_ok=False)
    assert [e.code for _r, e in errors] == ["not_enough_replicas"]
    retry = seq.sequence([_answered("all", msg_id="m1")], 0, 0, 2000, isr_ok=True)
    assert [(s.offset, s.duplicate) for s in retry.sequenced] == [(0, False)]
    again = seq.sequence([_answered("all", msg_id="m1")], 1, 0, 3000, isr_ok=False)
    assert again.sequenced == [] and [e.code for _r, e in errors][-1] == "not_enough_replicas"
