"""Ack JSON on the reply subject: plain acks unchanged, duplicates flagged (JetStream's shape)."""

from __future__ import annotations

import json

import pytest

from ingest.produce.ack_router import AckRouter
from ingest.produce.request import ProduceRequest
from ingest.produce.sequencer import Sequenced
from spark_log.wire import ack_prefix, encode_ack, encode_duplicate_ack, encode_error

PREFIX = ack_prefix("orders", 2)


def test_plain_acks_have_no_duplicate_key():
    assert json.loads(encode_ack(PREFIX, 7)) == {"stream": "orders", "partition": 2, "offset": 7}
    assert json.loads(encode_ack(PREFIX, 7, 3)) == {
        "stream": "orders",
        "partition": 2,
        "offset": 7,
        "count": 3,
    }


def test_duplicate_acks_say_so_for_singles_and_batches():
    single = json.loads(encode_duplicate_ack(PREFIX, 7))
    assert single == {"stream": "orders", "partition": 2, "offset": 7, "duplicate": True}
    batch = json.loads(encode_duplicate_ack(PREFIX, 7, 3))
    assert batch == {"stream": "orders", "partition": 2, "offset": 7, "count": 3, "duplicate": True}


def test_the_router_picks_the_encoder_by_the_duplicate_flag():
    sent: list[tuple[str, bytes]] = []
    router = AckRouter(
        PREFIX,
        lambda subject, payload: sent.append((subject, payload)),
        encode_ack,
        encode_error,
        encode_duplicate_ack,
    )
    fresh = ProduceRequest("orders.in", "r1", "leader", "m1", None, value=b"a")
    again = ProduceRequest("orders.in", "r2", "leader", "m1", None, value=b"a")
    router.after_append(
        [Sequenced(fresh, 4, 1), Sequenced(again, 4, 1, duplicate=True)],
        end_offset=5,
        hw=0,
        isr_ok=True,
    )
    assert [(s, json.loads(p).get("duplicate")) for s, p in sent] == [("r1", None), ("r2", True)]


def test_the_router_requires_the_duplicate_encoder():
    import inspect

    parameter = inspect.signature(AckRouter).parameters["encode_duplicate_ack"]
    assert parameter.default is inspect.Parameter.empty
    with pytest.raises(TypeError):
        AckRouter(PREFIX, lambda *_: None, encode_ack, encode_error)  # type: ignore[call-arg]


def test_produce_acks_are_read_by_name_into_the_rest_publish_result():
    from ingest.api.publish_codec import publish_result
    from ingest.produce.request import ProduceAck

    ack = ProduceAck(offset=4, count=3)
    assert (ack.offset, ack.count, ack.duplicate) == (4, 3, False)
    assert not isinstance(ack, tuple)
    result = publish_result("orders", 2, [ack, ProduceAck(9, 1)])
    assert (result.offsets, result.duplicate) == ((4, 5, 6, 9), False)
    assert publish_result("orders", 2, [ProduceAck(4, 2, True)]).duplicate
    assert not publish_result("orders", 2, []).duplicate
