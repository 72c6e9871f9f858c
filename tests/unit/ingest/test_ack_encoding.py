"""Ack JSON on the reply subject: plain acks unchanged, duplicates flagged (JetStream's shape)."""

from __future__ import annotations

import json

from ingest.leader import AckRouter, Sequenced
from ingest.produce_request import ProduceRequest
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
